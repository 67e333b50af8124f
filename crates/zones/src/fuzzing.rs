//! Fuzz target body for UPDATEs to a zone tern signs (issues 24 and 25):
//! the signed *windows* ([`crate::update`]'s signed update, the window
//! signing of `crate::window`, tern-authority's patches) against the whole
//! zone signed again. Compiled by every build (the rustls `msgs::fuzzing`
//! pattern); `crates/fuzz/fuzz_targets/signed_update.rs` calls it and the
//! unit tests run it over the committed seed corpus. Not a stable API.
//!
//! The input is `[zone, (header, (owner, type, value)...)...]`:
//!
//! - the first octet chooses the denial (its low two bits: NSEC, NSEC3,
//!   NSEC3 with opt-out, NSEC) and, in its high bits, which optional parts the
//!   small zone `example.` has (`zone_text`): besides its apex, hosts,
//!   an insecure delegation with glue and a name below it, a secure one
//!   without glue, a delegation below an empty non-terminal, empty
//!   non-terminals, a wildcard, a DNAME with a name below it;
//! - each update then takes a header octet (its number of records, 1 to
//!   `MAX_RECORDS`, and whether the group of updates is signed after it
//!   or goes on) and 3 octets a record: an owner from `OWNERS` (every
//!   depth, at and below the cuts, under the DNAME, at the wildcard, the
//!   apex), an operation (add; delete an RRset, a name, one record) and a
//!   type from `TYPES` (RDATA from the value). At most `MAX_UPDATES`
//!   updates an input, the last ending its group.
//!
//! The signed zone is loaded (signed whole) once per process for each
//! zone the first octet can choose, with keys made once per denial in a
//! state directory of the process (`Fixture`; under `TMPDIR`, which
//! `scripts/fuzz-all.sh` points at a directory it removes after the run).
//! Each update goes through the path production takes: the engine on the
//! served version's records without the signer's, its difference as the
//! journal keeps it, and at the end of each group `sign_update` (a window
//! of the zone when it can be, else the whole zone), from the signed
//! records kept as the update thread keeps them: the load's for the first
//! group, then those the previous signing kept (all of them after a whole
//! signing, none after a window's: the served version's, walked).
//!
//! The engine is called as `tern_update::update`, where production calls
//! `update_signed` with the served version as the signer's view
//! (`update::signed::engine`): the two differ only in how prerequisites
//! see the signer's RRsets, and these updates have no prerequisites (and
//! name no type the signer owns, which production REFUSES before the
//! engine). The oracle, after each group:
//!
//! - the version served has, in meaning (records, and signatures by type
//!   covered, original TTL and key tag; as a multiset, so a second RRSIG
//!   by the same key over an RRset counts), the records of the whole zone
//!   signed again from the same unsigned records (`sign_again`);
//! - every RRSIG at an owner that changed verifies, with the version's
//!   apex DNSKEYs, over its RRset (`crate::verified`);
//! - its serial is above the one served before;
//! - the signed difference (journalled for IXFR) goes from the served
//!   serial to the new one, and the served records less its deleted and
//!   with its added are the new version's;
//! - a signing that fails fails whole too (and leaves the zone as it was);
//! - an update the engine refuses, or that changes nothing, leaves the
//!   engine's records as they were.
//!
//! And no panic but the oracle's, whatever the bytes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use tern_authority::{RecordCursor, Zone};
use tern_update::{Access, Requester, UpdateMessage, UpdateOptions, UpdateRule, ZoneRecords};
use tern_wire::name::NameBuf;
use tern_wire::types::RType;
use tern_xfr::journal::Difference;
use tern_zone::{RecordList, Records, Sink};

use crate::rollover::ZoneKeys;
use crate::update::bench_api;

/// The most updates one input makes.
const MAX_UPDATES: usize = 8;

/// The most records one update has.
const MAX_RECORDS: usize = 4;

/// Octets of one update record in the input.
const RECORD_OCTETS: usize = 3;

/// The owners updates name (relative to `example.`; `@` the apex): at
/// every depth, names of the zone and new ones, at and below its cuts
/// (`sub` insecure with glue, `sec` secure, `x.e` below the empty
/// non-terminal `e`), at and under the DNAME `dn`, at and beside the
/// wildcard `*.w`, empty non-terminals (`e2`, `e1.e2`, `e`), and names
/// where delegations and DNAMEs can be made above others (`a`, `new`).
const OWNERS: [&str; 32] = [
    "@",
    "a",
    "b.a",
    "c.b.a",
    "new",
    "n.new",
    "e2",
    "e1.e2",
    "c.e1.e2",
    "sub",
    "ns.sub",
    "deep.x.sub",
    "sec",
    "g.sec",
    "*.w",
    "q.w",
    "w",
    "z.*.w",
    "dn",
    "x.dn",
    "e",
    "x.e",
    "ns.x.e",
    "y.e",
    "h0",
    "h7",
    "y.h0",
    "ns",
    "zz",
    "*",
    "mail",
    "a.b.c.d.deep",
];

/// The types updates name: not those the signer makes (an UPDATE naming
/// one is REFUSED before the engine runs), some twice to weigh them.
const TYPES: [RType; 16] = [
    RType::A,
    RType::AAAA,
    RType::NS,
    RType::DS,
    RType::DNAME,
    RType::TXT,
    RType::MX,
    RType::CNAME,
    RType::A,
    RType::NS,
    RType::DS,
    RType::TXT,
    RType::SOA,
    RType::SRV,
    RType::ANY,
    RType::CAA,
];

/// Names RDATA points to: in the zone (glue, below a cut, under the
/// DNAME, new) and outside it.
const TARGETS: [&str; 8] = [
    "ns.example.",
    "ns.sub.example.",
    "ns.example.net.",
    "ns.new.example.",
    "x.dn.example.",
    "a.example.",
    "example.net.",
    "sub.example.",
];

/// The zone's parts: always present, then one per bit of the zone
/// octet's high bits (bits 2 to 7).
const ZONE_BASE: &str = "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\n\
     ns A 192.0.2.1\na A 192.0.2.2\nb.a TXT \"b\"\nh0 A 192.0.2.3\nh7 A 192.0.2.4\n";
const ZONE_PARTS: [&str; 6] = [
    // An insecure delegation with glue, and a name below it.
    "sub NS ns.sub\nns.sub A 192.0.2.9\ndeep.x.sub A 192.0.2.10\n",
    // A secure delegation, its NS outside the zone.
    "sec NS ns.example.net.\nsec DS 12345 13 2 \
     0101010101010101010101010101010101010101010101010101010101010101\n",
    // A delegation below an empty non-terminal, and one more.
    "x.e NS ns.x.e\nns.x.e A 192.0.2.11\nc.e1.e2 A 192.0.2.12\n",
    // A wildcard, a name beside it.
    "*.w TXT \"wild\"\nq.w A 192.0.2.13\n",
    // A DNAME.
    "dn DNAME example.net.\n",
    // More hosts.
    "h1 A 192.0.2.21\nh2 A 192.0.2.22\nh3 MX 10 h1\nzz AAAA 2001:db8::1\nmail A 192.0.2.25\n",
];

/// The zone file's text of the zone octet `choice`.
fn zone_text(choice: u8) -> String {
    let mut text = String::from(ZONE_BASE);
    for (bit, part) in ZONE_PARTS.iter().enumerate() {
        if choice & (4 << bit) != 0 {
            text.push_str(part);
        }
    }
    text
}

/// The denial of the zone octet's low bits: NSEC (0 and 3), NSEC3 (1),
/// NSEC3 with opt-out (2).
fn denial(choice: u8) -> u8 {
    (choice & 3) % 3
}

//----------- The signed zones, once per process -----------------------------

/// A zone loaded and signed: the version served, its signed records as
/// the load made them (in the signer's order) and its keys.
struct Fixture {
    served: Arc<Zone>,
    signed: Vec<tern_zone::Record>,
    keys: Arc<ZoneKeys>,
}

/// The process's state directory (one per denial below it, where its
/// keys are made once) and the zones loaded so far, by zone octet (its
/// denial and parts).
struct Fixtures {
    dir: PathBuf,
    loaded: Mutex<Vec<Option<Arc<Fixture>>>>,
}

fn fixtures() -> &'static Fixtures {
    static FIXTURES: OnceLock<Fixtures> = OnceLock::new();
    FIXTURES.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("tern-fuzz-signed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Fixtures {
            dir,
            loaded: Mutex::new(vec![None; 256]),
        }
    })
}

/// The signed zone of the zone octet `choice` (its parts and denial; the
/// parts' bits 0 and 1 do not count), loaded the first time it is asked
/// for; `None` if it does not load (never expected).
fn fixture(choice: u8) -> Option<Arc<Fixture>> {
    let fixtures = fixtures();
    let choice = (choice & 0xfc) | denial(choice);
    let mut loaded = fixtures
        .loaded
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(fixture) = &loaded[usize::from(choice)] {
        return Some(Arc::clone(fixture));
    }
    let dir = fixtures.dir.join(format!("denial-{}", denial(choice)));
    // A start: no signed records or serial saved by another zone's load
    // (the keys stay).
    let _ = std::fs::remove_dir_all(dir.join("state").join("signed"));
    std::fs::create_dir_all(&dir).ok()?;
    let file = dir.join("example.zone");
    std::fs::write(&file, zone_text(choice)).ok()?;
    let mut policy = crate::signing::Policy::new("fuzz".to_string());
    policy.nsec3 = (denial(choice) != 0).then_some(crate::policy::Nsec3Policy {
        iterations: 1,
        salt_length: 4,
        opt_out: denial(choice) == 2,
        salt_lifetime: 0,
    });
    let origin: Box<[u8]> = b"\x07example\x00".to_vec().into();
    let sources = crate::load::Sources {
        dir: None,
        listed: vec![("example.".to_string(), file)],
        signing: Some(crate::signing::Signing::new(
            dir.join("state"),
            1,
            vec![(origin, Arc::new(policy))],
        )),
    };
    let mut done = crate::load::load_all(&sources, None).ok()?;
    let (served, stamp) = done.zones.pop()?;
    let records = stamp.signed()?.records().ok()?;
    let fixture = Arc::new(Fixture {
        served,
        signed: (0..records.len())
            .map(|index| records.record(index).to_record())
            .collect(),
        keys: Arc::clone(stamp.keys()?),
    });
    loaded[usize::from(choice)] = Some(Arc::clone(&fixture));
    Some(fixture)
}

//----------- The input's updates -------------------------------------------

/// One update record's owner, type, class, TTL and RDATA from its 3
/// octets: `[owner (5 bits), operation (2 bits), TTL (1 bit)]`,
/// `[type (4 bits), value's high bits]`, `[value]`.
fn update_record(octets: &[u8]) -> (&'static str, RType, u16, u32, Vec<u8>) {
    let (a, b, value) = (octets[0], octets[1], octets[2]);
    let owner = OWNERS[usize::from(a & 31)];
    let rtype = TYPES[usize::from(b & 15)];
    let ttl = if a & 0x80 != 0 { 60 } else { 300 };
    let target = || wire(TARGETS[usize::from(value % 8)]);
    let rdata = match rtype {
        RType::A => vec![192, 0, 2, value],
        RType::AAAA => [&[0x20, 0x01, 0x0d, 0xb8][..], &[0; 11], &[value]].concat(),
        RType::NS | RType::CNAME | RType::DNAME => target(),
        RType::DS => [&[0x30, b >> 4, 13, 2][..], &[value; 32]].concat(),
        RType::MX => [&[0, value >> 3][..], &target()].concat(),
        RType::SRV => [&[0, 1, 0, 1, 0, 53][..], &target()].concat(),
        RType::SOA => {
            let mut rdata = [wire("ns.example."), wire("hostmaster.example.")].concat();
            for field in [u32::from(value), 3600, 900, 604_800, 300] {
                rdata.extend_from_slice(&field.to_be_bytes());
            }
            rdata
        }
        RType::CAA => [&[0, 5][..], b"issue", &[b'a' + value % 26]].concat(),
        _ => vec![1, value],
    };
    // Add (of type ANY: FORMERR), delete the RRset (class ANY), delete the
    // name (ANY, type ANY), delete one record (class NONE).
    match (a >> 5) & 3 {
        0 => (owner, rtype, 1, ttl, rdata),
        1 => (owner, rtype, 255, 0, Vec::new()),
        2 => (owner, RType::ANY, 255, 0, Vec::new()),
        _ => (owner, rtype, 254, 0, rdata),
    }
}

/// The wire form of an absolute name of the tables above.
fn wire(text: &str) -> Vec<u8> {
    NameBuf::from_text(text.as_bytes(), None)
        .map(|name| name.as_bytes().to_vec())
        .unwrap_or_default()
}

/// An UPDATE of `example.` with the update records `updates` (owner
/// labels relative to `example.`, `@` for the apex; type, class, TTL,
/// RDATA); `None` if it does not parse. Also the UPDATEs of
/// `update::signed`'s tests.
pub(crate) fn update_message<R: AsRef<[u8]>>(
    updates: &[(&str, RType, u16, u32, R)],
) -> Option<UpdateMessage> {
    let count = u16::try_from(updates.len()).ok()?;
    let mut m = vec![0, 1, 0x28, 0, 0, 1, 0, 0];
    m.extend_from_slice(&count.to_be_bytes());
    m.extend_from_slice(&[0, 0]);
    m.extend_from_slice(b"\x07example\x00\x00\x06\x00\x01");
    for (owner, rtype, class, ttl, rdata) in updates {
        let rdata = rdata.as_ref();
        for label in owner.split('.').filter(|label| *label != "@") {
            m.push(label.len() as u8);
            m.extend_from_slice(label.as_bytes());
        }
        m.extend_from_slice(&[0xc0, 12]);
        m.extend_from_slice(&rtype.0.to_be_bytes());
        m.extend_from_slice(&class.to_be_bytes());
        m.extend_from_slice(&ttl.to_be_bytes());
        m.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        m.extend_from_slice(rdata);
    }
    UpdateMessage::parse(&m).ok()
}

/// The updates' text, for the oracle's messages.
fn describe(updates: &[(&str, RType, u16, u32, Vec<u8>)]) -> String {
    updates
        .iter()
        .map(|(owner, rtype, class, ttl, rdata)| {
            format!("{owner} {ttl} class {class} {rtype} {rdata:02x?}")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

//----------- The oracle ----------------------------------------------------

/// One record's meaning: (owner lowercased, type, TTL, RDATA), an
/// RRSIG's RDATA as its type covered, original TTL and key tag (two
/// signings of the same records agree on it; ECDSA signatures differ).
type Entry = (Vec<u8>, u16, u32, Vec<u8>);

/// What signed records say: each entry with how many records have it (a
/// multiset, so that a second RRSIG by the same key over the same RRset,
/// stale or not, counts).
type Meaning = BTreeMap<Entry, usize>;

/// The entries `a` has more of than `b`, with how many more.
fn surplus<'a>(a: &'a Meaning, b: &Meaning) -> Vec<(&'a Entry, usize)> {
    a.iter()
        .filter_map(|(entry, &count)| {
            let more = count.saturating_sub(b.get(entry).copied().unwrap_or(0));
            (more > 0).then_some((entry, more))
        })
        .collect()
}

fn entry(owner: tern_wire::name::Name<'_>, rtype: RType, ttl: u32, rdata: &[u8]) -> Entry {
    let rdata = if rtype == RType::RRSIG && rdata.len() >= 18 {
        [&rdata[..2], &rdata[4..8], &rdata[16..18]].concat()
    } else {
        rdata.to_vec()
    };
    (owner.to_lower().as_bytes().to_vec(), rtype.0, ttl, rdata)
}

fn meaning<L: RecordList + ?Sized>(records: &L) -> Meaning {
    let mut out = Meaning::new();
    for index in 0..records.len() {
        let record = records.record(index);
        *out.entry(entry(record.owner, record.rtype, record.ttl, record.rdata))
            .or_default() += 1;
    }
    out
}

fn served_meaning(zone: &Zone) -> Meaning {
    let mut out = Meaning::new();
    let mut cursor = RecordCursor::default();
    while let Some(record) = zone.next_record(&mut cursor) {
        *out.entry(entry(record.owner, record.rtype, record.ttl, record.rdata))
            .or_default() += 1;
    }
    out
}

/// The engine's records, for "as they were".
fn unsigned_meaning(records: &ZoneRecords) -> Meaning {
    meaning(&records.to_records())
}

/// The signed difference (what the update thread journals for IXFR):
/// from the served version's serial to the new one's, and the served
/// version's records but its SOA, less those it deletes and with those it
/// adds, are the new version's.
fn check_difference(served: &Zone, new: &Zone, difference: &Difference, group: &str) {
    assert_eq!(
        (difference.from_serial(), difference.to_serial()),
        (served.serial(), new.serial()),
        "the signed difference's serials after {group}"
    );
    let mut records = tern_xfr::journal::records_but_soa(served);
    for record in &difference.deleted {
        assert!(
            records.remove(record),
            "the signed difference deletes {record:02x?}, not served, after {group}"
        );
    }
    for record in &difference.added {
        assert!(
            records.insert(record.clone()),
            "the signed difference adds {record:02x?}, served already, after {group}"
        );
    }
    assert!(
        records == tern_xfr::journal::records_but_soa(new),
        "served - deleted + added is not the new version after {group}"
    );
}

/// How the groups of an input were signed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Signings {
    /// Groups signed as a window of the zone.
    pub windows: usize,
    /// Groups signed whole.
    pub whole: usize,
    /// Groups whose signing failed (as the whole zone's did).
    pub failed: usize,
    /// Groups signed whole from the signed records the previous group's
    /// whole signing kept (not the load's, not the served version's
    /// walked): production's path after a whole signing.
    pub from_kept: usize,
}

/// The fuzz target body: how the input's groups were signed (for the
/// seed test: the corpus must reach windows).
pub fn signed_update(data: &[u8]) -> Signings {
    let mut signings = Signings::default();
    let Some((&choice, mut rest)) = data.split_first() else {
        return signings;
    };
    let Some(fixture) = fixture(choice) else {
        panic!("the zone of {choice:#04x} does not load and sign");
    };
    let keys = &fixture.keys;
    let Some(mut unsigned) = bench_api::unsigned_records(&fixture.served, keys).ok() else {
        panic!("the signed zone's records do not take updates");
    };
    let mut served = Arc::clone(&fixture.served);
    let state = keys
        .dir
        .parent()
        .and_then(std::path::Path::parent)
        .expect("keys under a state directory")
        .to_path_buf();
    let rules = [UpdateRule::default()];
    let access = Access {
        rules: &rules,
        requester: Requester {
            key: None,
            address: "127.0.0.1".parse().expect("an address"),
        },
    };
    let options = UpdateOptions {
        signed: true,
        ..UpdateOptions::default()
    };
    let mut differences: Vec<Difference> = Vec::new();
    let mut group_text = String::new();
    // The signed records kept for the served version, as the update
    // thread keeps them: the load's (in the signer's order), then those
    // of each signing (none after a window's: then the next whole
    // signing walks the served version's).
    let mut kept = Records::new();
    let mut kept_by_signing = false;
    for record in &fixture.signed {
        Sink::record(&mut kept, record.as_record_ref()).expect("a record fits");
    }
    for n in 0..MAX_UPDATES {
        let Some((&header, after)) = rest.split_first() else {
            break;
        };
        let count = 1 + usize::from(header) % MAX_RECORDS;
        let octets = after.len().min(count * RECORD_OCTETS);
        let (records, after) = after.split_at(octets);
        rest = after;
        let updates: Vec<_> = records
            .chunks_exact(RECORD_OCTETS)
            .map(update_record)
            .collect();
        // The last update an input may make ends its group, whatever its
        // header says (else that group would go unsigned and unchecked).
        let ends_group = header & 0x80 == 0 || rest.is_empty() || n + 1 == MAX_UPDATES;
        if let Some(message) = update_message(&updates) {
            let before = unsigned_meaning(&unsigned);
            match tern_update::update(&mut unsigned, &message, &access, &options) {
                Ok(Some(difference)) => {
                    differences.push(bench_api::journal_difference(difference));
                    group_text.push_str(&describe(&updates));
                    group_text.push_str(" | ");
                }
                Ok(None) | Err(_) => assert!(
                    unsigned_meaning(&unsigned) == before,
                    "the engine changed records it refused or found no change in: {}",
                    describe(&updates)
                ),
            }
        }
        if !ends_group || differences.is_empty() {
            continue;
        }
        // The group signed as the update thread signs it, from the signed
        // records kept; and the whole zone signed again from the served
        // version's, walked.
        let update = bench_api::sign_update(&served, &kept, &unsigned, &differences, keys);
        let previous = bench_api::served_records(&served).expect("the served version's records");
        let whole = crate::signing::sign_again(
            served.origin(),
            &previous,
            &unsigned.to_records(),
            &keys.policy,
            &state,
            crate::unix_time(),
            Some(served.serial()),
        );
        let (update, whole) = match (update, whole) {
            (Ok(update), Ok(whole)) => (update, whole),
            (Err(_), Err(_)) => {
                // Production drops the records and makes them again from
                // the version served.
                signings.failed += 1;
                unsigned = bench_api::unsigned_records(&served, keys)
                    .expect("the served version's records");
                differences.clear();
                group_text.clear();
                continue;
            }
            (Ok(_), Err(err)) => panic!("signed as an update, not whole ({err}): {group_text}"),
            (Err(err), Ok(_)) => panic!("signed whole, not as an update ({err}): {group_text}"),
        };
        if update.kept == 0 {
            signings.windows += 1;
        } else {
            signings.whole += 1;
            signings.from_kept += usize::from(kept_by_signing);
        }
        let got = served_meaning(&update.zone);
        let want = meaning(&whole.zone.records);
        if got != want {
            let missing = surplus(&want, &got);
            let extra = surplus(&got, &want);
            panic!(
                "the version served is not the whole zone signed again ({}) after {group_text}\n\
                 missing {missing:02x?}\nextra {extra:02x?}",
                if update.kept == 0 { "window" } else { "whole" }
            );
        }
        assert!(
            update.zone.serial() != served.serial()
                && tern_xfr::axfr::serial_at_or_after(update.zone.serial(), served.serial()),
            "serial {} after {}",
            update.zone.serial(),
            served.serial()
        );
        assert!(crate::verified::assert_changed_rrsigs_verify(&served, &update.zone) > 0);
        check_difference(&served, &update.zone, &update.difference, &group_text);
        served = update.zone;
        kept = update.records;
        kept_by_signing = update.kept != 0;
        differences.clear();
        group_text.clear();
    }
    signings
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    fn seeds() -> Vec<(String, Vec<u8>)> {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/signed_update");
        let mut seeds: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read(&path).unwrap())
            })
            .collect();
        seeds.sort();
        seeds
    }

    /// Every seed of `crates/fuzz/corpus/signed_update/` passes the
    /// oracle; for each denial the seeds sign windows (not only the whole
    /// zone) and also the whole zone. Then short inputs, and one longer
    /// than the bounds. (One test: the fixtures' state directory is the
    /// process's, removed at the end.)
    #[test]
    fn seeds_run_and_sign_windows() {
        let mut windows = [0; 3];
        let mut whole = [0; 3];
        let mut from_kept = [0; 3];
        let mut seen = 0;
        for (name, data) in seeds() {
            let signings = signed_update(&data);
            eprintln!("{name}: {signings:?}");
            seen += 1;
            windows[usize::from(denial(data[0]))] += signings.windows;
            whole[usize::from(denial(data[0]))] += signings.whole;
            from_kept[usize::from(denial(data[0]))] += signings.from_kept;
        }
        assert!(seen >= 21, "{seen} seeds");
        assert!(
            windows.iter().all(|&windows| windows >= 10),
            "windows by denial {windows:?}"
        );
        assert!(
            whole.iter().all(|&whole| whole >= 1),
            "whole signings by denial {whole:?}"
        );
        assert!(
            from_kept.iter().all(|&from_kept| from_kept >= 1),
            "whole signings from the records kept by denial {from_kept:?}"
        );
        assert_eq!(signed_update(&[]), Signings::default());
        assert_eq!(signed_update(&[0]), Signings::default());
        // Updates past the bounds, each going on with its group: the
        // first MAX_UPDATES make one group (A records added at `a`, a
        // change), signed and checked once; the rest are not read.
        let mut long = vec![0];
        for update in 0..MAX_UPDATES + 2 {
            long.push(0xff);
            for record in 0..MAX_RECORDS {
                long.extend_from_slice(&[1, 0, (update * MAX_RECORDS + record) as u8 + 100]);
            }
        }
        let signings = signed_update(&long);
        assert_eq!(signings.windows + signings.whole, 1, "{signings:?}");
        assert_eq!(signings.failed, 0);
        duplicates_count();
        let _ = std::fs::remove_dir_all(&fixtures().dir);
    }

    /// The oracle's meaning is a multiset: a second RRSIG by the same key
    /// over the same RRset (which would verify too) makes it differ.
    fn duplicates_count() {
        let fixture = fixture(0).unwrap();
        let mut records = Records::new();
        let mut doubled = Records::new();
        for record in &fixture.signed {
            Sink::record(&mut records, record.as_record_ref()).unwrap();
            Sink::record(&mut doubled, record.as_record_ref()).unwrap();
        }
        let rrsig = fixture
            .signed
            .iter()
            .find(|record| record.rtype == RType::RRSIG)
            .unwrap();
        Sink::record(&mut doubled, rrsig.as_record_ref()).unwrap();
        let (one, two) = (meaning(&records), meaning(&doubled));
        assert_ne!(one, two);
        assert_eq!(surplus(&two, &one).len(), 1);
        assert_eq!(served_meaning(&fixture.served), one);
    }
}
