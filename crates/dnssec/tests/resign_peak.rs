//! A start from a zone's saved signed copy holds no more heap than its
//! whole signing (issue 24: a restart of a 200,000-record signed zone
//! peaked at 418 MiB, against 82 MiB when it was signed whole).
//! [`resign_zone`] collects the new version as owned records (a `Record`
//! is 288 octets before its RDATA) in a vector grown by doubling, on top
//! of the previous version; [`resign_zone_into`] hands each record to the
//! caller's sink as it is made (the loader's: the kept file), holding one
//! batch of names in compact form.
//!
//! The heap measured is dhat's (requested bytes, Vec capacities
//! included), above what is live before each call: the zone's records
//! (and, for the start, its previous signed version) are the caller's.
//! The records handed out are counted and dropped, as the kept file takes
//! them to disk. One binary with its own `main`, as dhat's profiler is
//! global; the whole signing is measured first, so that its peak is the
//! process's (exact), the start's after it (at most its own). It also checks that the records streamed are those
//! [`resign_zone`] makes, in the same order.

use std::path::Path;

use tern_dnssec::{
    resign_zone, resign_zone_into, sign_zone_into, Algorithm, Denial, KeyRole, KeySet, Nsec3Params,
    Refresh, SignOptions, SigningKey, Validity,
};
use tern_wire::name::NameBuf;
use tern_zone::{parse_bytes, NoInclude, Options, RecordList, RecordRef, Records, Sink};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// Names of the zone, each with an A record.
const NAMES: usize = 20_000;

/// The most heap a start from the saved copy may hold at once, above what
/// is live before it, per octet the whole signing holds.
const MAX_START_PER_WHOLE: f64 = 1.5;

const NOW: u64 = 1_800_000_000;

/// Counts the records handed to it and keeps none.
#[derive(Default)]
struct Count(usize);

impl Sink for Count {
    fn record(&mut self, _: RecordRef<'_>) -> Result<(), &'static str> {
        self.0 += 1;
        Ok(())
    }
}

/// The zone, made record by record into compact form (parsing a file of
/// it would peak above its whole signing).
fn zone(origin: &NameBuf) -> Records {
    let text = "@ 3600 SOA ns hostmaster 1 2h 1h 1w 300\n  NS ns\nns A 192.0.2.1\n";
    let parsed = parse_bytes(
        text.as_bytes(),
        Path::new("big.zone"),
        origin.as_name(),
        &Options::default(),
        &mut NoInclude,
    )
    .unwrap()
    .records;
    let mut records = Records::new();
    for index in 0..parsed.len() {
        Sink::record(&mut records, RecordList::record(&parsed, index)).unwrap();
    }
    let last = RecordList::record(&parsed, parsed.len() - 1);
    for index in 0..NAMES {
        let owner = NameBuf::from_text(format!("h{index}.big.").as_bytes(), None).unwrap();
        let rdata = [192, 0, 2, (index % 250 + 1) as u8];
        let record = RecordRef {
            owner: owner.as_name(),
            rdata: &rdata,
            ..last
        };
        Sink::record(&mut records, record).unwrap();
    }
    records
}

fn options(denial: Denial) -> SignOptions {
    SignOptions {
        validity: Validity::new(NOW - 3600, NOW + 14 * 86_400).unwrap(),
        dnskey_ttl: None,
        denial,
        serial_above: None,
    }
}

/// The heap's peak while `run` runs, above what is live before it, and
/// whether that peak is the process's highest (else what is returned is
/// the process's peak above what was live before `run`: more than `run`'s
/// own, never less; dhat's peak is not reset).
fn peak_of(run: impl FnOnce()) -> (u64, bool) {
    let before = dhat::HeapStats::get();
    run();
    let after = dhat::HeapStats::get();
    (
        after.max_bytes as u64 - before.curr_bytes as u64,
        after.max_bytes > before.max_bytes,
    )
}

/// Signs a zone whole, then from that as a start does: the peaks of both
/// compared if `measure` (the first call, while the whole signing's peak
/// is the process's highest), and the records streamed checked against
/// [`resign_zone`]'s.
fn check(denial: Denial, label: &str, measure: bool) {
    let origin = NameBuf::from_text(b"big.", None).unwrap();
    let records = zone(&origin);
    let (key, _) = SigningKey::generate(Algorithm::Ed25519, KeyRole::Csk).unwrap();
    let keys = [key];
    let set = KeySet::by_role(&keys);
    let options = options(denial);
    let refresh = Refresh {
        now: NOW,
        refresh: 7 * 86_400,
        jitter: 0,
        window: 0,
    };
    let (whole, exact) = peak_of(|| {
        let mut count = Count::default();
        sign_zone_into(origin.as_name(), &records, &set, &options, 1, &mut count).unwrap();
        assert!(count.0 > 4 * NAMES);
    });
    assert!(
        !measure || exact,
        "{label}: the whole signing's peak is the process's"
    );
    // The saved copy: the whole signing's records, compact.
    let mut previous = Records::new();
    sign_zone_into(origin.as_name(), &records, &set, &options, 1, &mut previous).unwrap();
    let (start, _) = peak_of(|| {
        let mut count = Count::default();
        resign_zone_into(
            origin.as_name(),
            &previous,
            &records,
            &set,
            &options,
            &refresh,
            &mut count,
        )
        .unwrap();
        assert_eq!(count.0, previous.len());
    });
    let ratio = start as f64 / whole as f64;
    eprintln!(
        "{label}: peak above the zone: whole signing {whole} octets, start from the saved \
         copy {start} ({ratio:.2} times)"
    );
    assert!(
        !measure || ratio <= MAX_START_PER_WHOLE,
        "{label}: a start from the saved copy holds {start} octets at its peak, {ratio:.2} \
         times the whole signing's {whole} (at most {MAX_START_PER_WHOLE})"
    );

    // The same records as resign_zone makes, in its order.
    let mut streamed = Vec::new();
    let stats = resign_zone_into(
        origin.as_name(),
        &previous,
        &records,
        &set,
        &options,
        &refresh,
        &mut streamed,
    )
    .unwrap();
    let collected = resign_zone(
        origin.as_name(),
        &previous,
        &records,
        &set,
        &options,
        &refresh,
    )
    .unwrap();
    assert_eq!(streamed, collected.records, "{label}: the records streamed");
    assert_eq!(stats.records, streamed.len());
    assert_eq!(stats.signatures, collected.signatures);
    assert_eq!(stats.kept, collected.kept);
    assert_eq!(stats.next_refresh, collected.next_refresh);
    assert!(stats.kept > 2 * NAMES, "{label}: the signatures are kept");
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    check(Denial::Nsec, "NSEC", true);
    check(
        Denial::Nsec3(Nsec3Params {
            iterations: 0,
            salt: Vec::new(),
            opt_out: false,
        }),
        "NSEC3",
        false,
    );
}
