//! A signed zone's policy, one of `dnssec.policies` (issue 24; docs/config.md,
//! docs/decisions/0014): the types both the signer ([`crate::signing`]) and
//! the rollovers ([`crate::rollover`]) read, in a module that imports
//! neither.

use std::net::SocketAddr;

use tern_dnssec::{serial_higher, Algorithm};
use tern_wire::name::Name;
use tern_wire::types::RType;
use tern_zone::RecordList;

use crate::keys::KeyScheme;

//----------- Policy ---------------------------------------------------------

/// The default `rrsig-jitter`: two days, so that the signatures of a zone
/// signed at one moment are refreshed over two days rather than on one.
pub const DEFAULT_RRSIG_JITTER: u64 = 2 * 86_400;

/// The default `parent-ds-timeout`: a week, a parent (a registry, a
/// registrar) taking longer than that to publish a DS is stuck.
pub const DEFAULT_PARENT_DS_TIMEOUT: u64 = 7 * 86_400;

/// When CDS and CDNSKEY records are published (RFC 7344, RFC 8078).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CdsCdnskey {
    /// Never.
    None,
    /// While a KSK or CSK rollover waits for the parent.
    #[default]
    Rollover,
    /// Always, for the active KSKs.
    Always,
}

/// The default `salt-lifetime`: 30 days, Knot's `nsec3-salt-lifetime`.
pub const DEFAULT_SALT_LIFETIME: u64 = 30 * 86_400;

/// NSEC3 in a policy: the salt is drawn when a zone is first signed and
/// kept while it is signed again from its previous version, until it is
/// `salt_lifetime` old (`crate::sign_status::salt_rotation_at`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Nsec3Policy {
    /// Further iterations (RFC 9276: 0).
    pub iterations: u16,
    /// Octets of random salt (RFC 9276: 0).
    pub salt_length: u8,
    /// Whether insecure delegations are left out of the chain.
    pub opt_out: bool,
    /// How long a salt is used before a new one is drawn (the chain made
    /// again in one version), in seconds; 0: never.
    pub salt_lifetime: u64,
}

/// How the serial of each version tern signs is chosen (`serial-policy`,
/// Knot's names and rule: docs/decisions/0014, "Serial policy").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SerialPolicy {
    /// The serial served plus one (RFC 1982).
    #[default]
    Increment,
    /// The Unix time of the signing, or the serial served plus one when
    /// that is not higher (several versions in one second, a clock behind).
    UnixTime,
    /// `YYYYMMDDnn` of the signing's UTC date with `nn` 00, or the serial
    /// served plus one when that is not higher (the day's next version).
    DateSerial,
}

/// Where the parent's DS set is checked for a new KSK or CSK
/// ([`crate::parent`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParentCheck {
    /// The parent's servers queried for the DS set.
    pub servers: Vec<SocketAddr>,
    /// How often they are queried, in seconds.
    pub check_interval: u64,
}

/// One policy of `dnssec.policies`; times are in seconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Its name, which zones give as `dnssec-policy`.
    pub name: String,
    /// The keys' algorithm.
    pub algorithm: Algorithm,
    /// The modulus of RSA keys generated, in bits (`key-size`; not looked
    /// at for the other algorithms).
    pub key_size: usize,
    /// CSK, or KSK and ZSK.
    pub keys: KeyScheme,
    /// The ZSK's lifetime from its activation; 0: never rolled.
    pub zsk_lifetime: u64,
    /// The KSK's (or CSK's) lifetime from its activation; 0: never
    /// rolled.
    pub ksk_lifetime: u64,
    /// How long a change of the zone takes to reach every secondary, and
    /// the parent's change every one of its servers (RFC 7583's Dprp):
    /// added to each wait of a rollover.
    pub propagation_delay: u64,
    /// The TTL of the parent's DS RRset, waited for after a DS is seen by
    /// hand (`tern keys ds-seen`; the parent check reads it).
    pub parent_ds_ttl: u64,
    /// How long a KSK or CSK rollover may wait for the parent's DS before
    /// it is reported loudly (logged at every signing, shown in `tern
    /// zone-status`, a metric); 0: never. It keeps waiting either way
    /// (docs/decisions/0014, "Signing status, failures and the parent
    /// wait").
    pub parent_ds_timeout: u64,
    /// How long a signature is valid from its signing.
    pub rrsig_lifetime: u64,
    /// How long before expiry a signature is made anew, at the latest.
    pub rrsig_refresh: u64,
    /// How much earlier still, at most, spread over the signatures so
    /// that they are refreshed in batches over this time rather than all
    /// at once ([`tern_dnssec::Refresh`]).
    pub rrsig_jitter: u64,
    /// NSEC3, or NSEC when `None`.
    pub nsec3: Option<Nsec3Policy>,
    /// The DNSKEY RRset's TTL; `None`: the SOA's.
    pub dnskey_ttl: Option<u32>,
    /// CDS and CDNSKEY publication.
    pub cds_cdnskey: CdsCdnskey,
    /// The parent's DS check; `None`: by hand only (`tern keys ds-seen`).
    pub parent: Option<ParentCheck>,
    /// How each signed version's serial is chosen.
    pub serial_policy: SerialPolicy,
}

impl Policy {
    /// The defaults (as docs/config.md lists them) under `name`.
    pub fn new(name: String) -> Policy {
        Policy {
            name,
            algorithm: Algorithm::EcdsaP256Sha256,
            key_size: tern_dnssec::key::RSA_DEFAULT_BITS,
            keys: KeyScheme::Csk,
            zsk_lifetime: 30 * 86_400,
            ksk_lifetime: 0,
            propagation_delay: 3600,
            parent_ds_ttl: 86_400,
            parent_ds_timeout: DEFAULT_PARENT_DS_TIMEOUT,
            rrsig_lifetime: 14 * 86_400,
            rrsig_refresh: 7 * 86_400,
            rrsig_jitter: DEFAULT_RRSIG_JITTER,
            nsec3: None,
            dnskey_ttl: None,
            cds_cdnskey: CdsCdnskey::default(),
            parent: None,
            serial_policy: SerialPolicy::default(),
        }
    }
}

//----------- Serial policy --------------------------------------------------

/// The serial `policy` wants at Unix time `now` when it is above the one
/// served (Knot's "minimum"): `None` for [`SerialPolicy::Increment`].
fn policy_minimum(policy: SerialPolicy, now: u64) -> Option<u32> {
    match policy {
        SerialPolicy::Increment => None,
        // Serials are 32 bits and compared in RFC 1982 terms: the Unix
        // time wraps with them in 2106.
        SerialPolicy::UnixTime => Some(now as u32),
        SerialPolicy::DateSerial => {
            let (year, month, day) = civil_date(now);
            // Years up to 4294 fit; past that the serial wraps (RFC 1982
            // then keeps it ordered for a while, as for the Unix time).
            Some(
                year.wrapping_mul(1_000_000)
                    .wrapping_add(month * 10_000)
                    .wrapping_add(day * 100),
            )
        }
    }
}

/// The UTC date (year, month 1..=12, day 1..=31) of the Unix time `now`
/// (the proleptic Gregorian calendar's days-from-civil algorithm run
/// backwards; no leap seconds, as Unix time has none).
fn civil_date(now: u64) -> (u32, u32, u32) {
    let days = now / 86_400;
    // Days from 0000-03-01, so that the leap day ends each 400-year era.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (
        u32::try_from(year).unwrap_or(u32::MAX),
        month as u32,
        day as u32,
    )
}

/// The serial of a signed version under `policy` at Unix time `now`, for
/// an input (zone file, or version received) at serial `file` when
/// `served` was served before (`None`: nothing, a first signing with no
/// serial saved). All comparisons are RFC 1982's ([`serial_higher`]).
///
/// - After `served`: the policy's next serial is its minimum (the Unix
///   time, or today's `YYYYMMDD00`) when that is higher than `served`,
///   else `served + 1` (Knot's `serial_next`); the file's serial is kept
///   when it is higher than `served` and not below that next serial.
///   The result is always higher than `served`: a file serial 2^31 or
///   more past it (higher than the next serial, not higher than `served`)
///   gives `served + 1`.
/// - With nothing served: the file's serial, or the policy's minimum when
///   that is higher (Knot keeps the file's at a first load: tern makes
///   every signed version follow the policy).
pub fn next_serial(policy: SerialPolicy, file: u32, served: Option<u32>, now: u64) -> u32 {
    let minimum = policy_minimum(policy, now);
    let Some(served) = served else {
        return match minimum {
            Some(minimum) if serial_higher(minimum, file) => minimum,
            _ => file,
        };
    };
    let next = match minimum {
        Some(minimum) if serial_higher(minimum, served) => minimum,
        _ => served.wrapping_add(1),
    };
    let file_at_or_past_next = serial_higher(file, next.wrapping_sub(1));
    if serial_higher(file, served) {
        if file_at_or_past_next {
            file
        } else {
            next
        }
    } else if file_at_or_past_next {
        // Past the next serial but not past the one served: RFC 1982
        // cannot order it after both, so the smallest step is taken.
        served.wrapping_add(1)
    } else {
        next
    }
}

/// The `serial_above` to give the signer (`tern_dnssec::SignOptions`,
/// which keeps the input's serial when higher than it, else makes it one
/// more) so that the zone `origin` made of `records` is signed at
/// [`next_serial`] under `policy`, `served` being the serial served (or
/// saved) before, at `now`. Bound: the records up to the apex SOA (the
/// first record of a zone file, as a rule); none with `increment`, whose
/// rule is the signer's own.
pub fn signer_serial_above<R: RecordList + ?Sized>(
    origin: Name<'_>,
    records: &R,
    policy: &Policy,
    served: Option<u32>,
    now: u64,
) -> Option<u32> {
    if policy.serial_policy == SerialPolicy::Increment {
        return served;
    }
    let file = (0..records.len())
        .map(|index| records.record(index))
        .find(|record| record.rtype == RType::SOA && record.owner.eq_ignore_case(origin))
        .and_then(|soa| {
            // The serial is the first of the 20 octets of timers that
            // end the RDATA.
            let at = soa.rdata.len().checked_sub(20)?;
            let field = soa.rdata.get(at..at + 4)?;
            Some(u32::from_be_bytes([field[0], field[1], field[2], field[3]]))
        });
    let Some(file) = file else {
        // No SOA: the signer refuses the zone; its rule is left as it is.
        return served;
    };
    let serial = next_serial(policy.serial_policy, file, served, now);
    // The signer keeps `file` when higher than `serial - 1`: exactly when
    // `serial` is `file` (next_serial's branches are built for this).
    Some(serial.wrapping_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the signer does with `serial_above` (tern_dnssec's
    /// `raise_serial_rdata`): the input's serial when higher, else one
    /// more than `above`.
    fn signer(file: u32, above: Option<u32>) -> u32 {
        match above {
            Some(above) if !serial_higher(file, above) => above.wrapping_add(1),
            _ => file,
        }
    }

    /// 2026-11-27 12:00:00 UTC.
    const NOW: u64 = 1_795_780_800;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(NOW), (2026, 11, 27));
        assert_eq!(civil_date(951_782_400), (2000, 2, 29), "a leap day");
        assert_eq!(civil_date(951_868_799), (2000, 2, 29));
        assert_eq!(civil_date(951_868_800), (2000, 3, 1));
        assert_eq!(
            civil_date(4_107_542_399),
            (2100, 2, 28),
            "2100 is no leap year"
        );
        assert_eq!(civil_date(4_107_542_400), (2100, 3, 1));
        assert_eq!(civil_date(253_402_300_799), (9999, 12, 31));
    }

    #[test]
    fn increment() {
        let inc = SerialPolicy::Increment;
        assert_eq!(next_serial(inc, 10, None, NOW), 10, "the file's at first");
        assert_eq!(
            next_serial(inc, 10, Some(9), NOW),
            10,
            "the file's is higher"
        );
        assert_eq!(next_serial(inc, 10, Some(10), NOW), 11);
        assert_eq!(next_serial(inc, 10, Some(500), NOW), 501);
        assert_eq!(next_serial(inc, 5, Some(u32::MAX), NOW), 5, "past the wrap");
        assert_eq!(next_serial(inc, 0, Some(u32::MAX), NOW), 0, "the wrap");
        assert_eq!(next_serial(inc, 7, Some(u32::MAX), NOW), 7);
        assert_eq!(next_serial(inc, 9, Some(u32::MAX - 1), NOW), 9);
        assert_eq!(
            next_serial(inc, 10, Some(10 + (1 << 31)), NOW),
            11 + (1 << 31)
        );
    }

    #[test]
    fn unixtime() {
        let unix = SerialPolicy::UnixTime;
        let now = NOW as u32;
        assert_eq!(next_serial(unix, 1, None, NOW), now, "the time at first");
        assert_eq!(
            next_serial(unix, now + 5, None, NOW),
            now + 5,
            "a file ahead"
        );
        assert_eq!(next_serial(unix, 1, Some(2), NOW), now);
        assert_eq!(next_serial(unix, 1, Some(now - 1), NOW), now);
        // Several versions in one second, or a clock gone back: one more.
        assert_eq!(next_serial(unix, 1, Some(now), NOW), now + 1);
        assert_eq!(next_serial(unix, 1, Some(now + 3600), NOW), now + 3601);
        // A file serial above both is kept; one between the served and the
        // time is not.
        assert_eq!(next_serial(unix, now + 9, Some(now), NOW), now + 9);
        assert_eq!(next_serial(unix, now - 9, Some(now - 20), NOW), now);
        // A served serial 2^31 or more behind the time: RFC 1982 does not
        // order the time after it, so one more.
        let far = now.wrapping_sub(1 << 31);
        assert_eq!(next_serial(unix, far, Some(far), NOW), far + 1);
        // A file serial past the time but 2^31 or more past the served
        // one: neither is higher than the served, so one more.
        let served = now - (1 << 30);
        let file = served.wrapping_add((1 << 31) + 5);
        assert_eq!(next_serial(unix, file, Some(served), NOW), served + 1);
    }

    #[test]
    fn dateserial() {
        let date = SerialPolicy::DateSerial;
        assert_eq!(next_serial(date, 1, None, NOW), 2026112700);
        assert_eq!(next_serial(date, 1, Some(2026112607), NOW), 2026112700);
        assert_eq!(next_serial(date, 1, Some(2026112700), NOW), 2026112701);
        assert_eq!(
            next_serial(date, 1, Some(2026112799), NOW),
            2026112800,
            "past nn 99"
        );
        assert_eq!(
            next_serial(date, 2026112742, Some(2026112705), NOW),
            2026112742
        );
        // From a unixtime serial (lower than a date's): the date.
        assert_eq!(next_serial(date, 1, Some(NOW as u32), NOW), 2026112700);
    }

    /// For every policy and serials around the wrap and 2^31 apart, the
    /// signer given [`signer_serial_above`]'s rule signs [`next_serial`],
    /// which is always higher than the serial served.
    #[test]
    fn the_signer_makes_next_serial_always_higher() {
        let points: Vec<u32> = {
            let now = NOW as u32;
            let bases = [0, 1, 1 << 30, 1 << 31, u32::MAX, now, 2_026_112_700];
            let steps = [0u32, 1, 2, 100, (1 << 31) - 1, 1 << 31, (1 << 31) + 1];
            let mut points = Vec::new();
            for base in bases {
                for step in steps {
                    points.push(base.wrapping_add(step));
                    points.push(base.wrapping_sub(step));
                }
            }
            points
        };
        for policy in [
            SerialPolicy::Increment,
            SerialPolicy::UnixTime,
            SerialPolicy::DateSerial,
        ] {
            for &file in &points {
                for served in points.iter().copied().map(Some).chain([None]) {
                    let serial = next_serial(policy, file, served, NOW);
                    let above = if policy == SerialPolicy::Increment {
                        served
                    } else {
                        Some(serial.wrapping_sub(1))
                    };
                    assert_eq!(signer(file, above), serial, "{policy:?} {file} {served:?}");
                    if let Some(served) = served {
                        assert!(serial_higher(serial, served), "{policy:?} {file} {served}");
                    }
                }
            }
        }
    }
}
