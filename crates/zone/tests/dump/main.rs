//! `tern dump` against `named-checkzone -D`, on every zone of the shared
//! corpora that all three reference tools accept.
//!
//! This pins the proof: each zone that BIND, Knot and NSD all
//! accept (the "VALID (all 3)" entries of `corpora/SOURCES.md`, read from
//! there so a new corpus file is picked up) must
//!
//! 1. load with the scanner and pass [`check_zone`] without errors;
//! 2. dump (with [`write_zone`]) to text that the scanner reads back to the
//!    same records (the printer's round trip);
//! 3. equal `named-checkzone -i local -k ignore -D -o - ORIGIN FILE` record
//!    for record: both outputs are read with the scanner and compared as
//!    sorted sets of (lowercased owner, class, type, TTL, canonical RDATA);
//! 4. equal BIND's text line for line (owner, TTL, class, type and RDATA
//!    text, whitespace between fields aside), with the differing lines
//!    listed on failure.
//!
//! The one policy difference, and how it is kept narrow: with no `$TTL`,
//! a record that omits its TTL gets 3600 from Knot and NSD (tern follows
//! them, `tern_zone::DEFAULT_TTL`) but the SOA MINIMUM or the last explicit
//! TTL from BIND (RFC 1035 section 5.1 / RFC 2308). For the files named in
//! [`TTL_POLICY_FILES`] the TTLs are compared with NSD's reprint of the
//! zone (`nsd-checkzone -p`) instead of BIND's, everything else still with
//! BIND's; and the test asserts that BIND and NSD do disagree on each of
//! these files, so the list cannot silently grow stale.
//!
//! `-i local` keeps named-checkzone from resolving out-of-zone NS targets
//! over the network (see the caveat in SOURCES.md); `-k ignore` turns off
//! check-names, which is policy, not syntax. A missing reference tool fails
//! the test: run `scripts/install-test-deps.sh` (the Makefile's dependency
//! step) to install bind9-utils and nsd.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use tern_wire::name::NameBuf;
use tern_zone::check::{check_zone, Severity};
use tern_zone::print::{canonical_rdata, write_zone};
use tern_zone::{parse_bytes, parse_file, NoInclude, Options, Record};

/// Files whose omitted TTLs (no `$TTL` in force) follow the Knot/NSD
/// default, so their TTLs are compared with NSD's reprint, not BIND's.
const TTL_POLICY_FILES: &[&str] = &[
    "bind9/bin__tests__system__masterfile__ns1__ttl1.db",
    "bind9/bin__tests__system__masterfile__ns1__ttl2.db",
    "domain/test-data__zonefiles__rfc1034-6-1-root.zone",
    "domain/test-data__zonefiles__rfc1034-6-1-edu.zone",
];

/// The fewest valid zones SOURCES.md lists today; fewer means the list was
/// not read right.
const MIN_VALID_ZONES: usize = 12;

fn corpora() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
}

/// The `(path, origin)` of every "VALID (all 3)" zone in SOURCES.md.
fn valid_zones() -> Vec<(String, String)> {
    let sources = std::fs::read_to_string(corpora().join("SOURCES.md"))
        .expect("corpora/SOURCES.md is readable (shared/ next to the repository)");
    let mut zones = Vec::new();
    let mut current: Option<String> = None;
    for line in sources.lines() {
        if let Some(rest) = line.strip_prefix("- **`") {
            current = rest.split('`').next().map(str::to_string);
        } else if line.contains("-> **VALID (all 3)**") {
            let origin = line
                .split("checks (origin `")
                .nth(1)
                .and_then(|rest| rest.split('`').next());
            if let (Some(path), Some(origin)) = (current.take(), origin) {
                zones.push((path, origin.to_string()));
            }
        }
    }
    zones
}

/// Runs a reference tool; a tool that is not installed fails the test.
fn run_tool(program: &str, args: &[&str], directory: &Path) -> (bool, String, String) {
    let output = Command::new(program)
        .args(args)
        .current_dir(directory)
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run {program} ({error}): the dump comparison needs the reference \
                 tools; run scripts/install-test-deps.sh (the Makefile's dependency install)"
            )
        });
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn origin_name(origin: &str) -> NameBuf {
    NameBuf::from_text(origin.as_bytes(), None).expect("origins in SOURCES.md are valid names")
}

fn parse_text(text: &str, label: &str, origin: &NameBuf) -> Result<Vec<Record>, String> {
    parse_bytes(
        text.as_bytes(),
        Path::new(label),
        origin.as_name(),
        &Options::default(),
        &mut NoInclude,
    )
    .map(|zone| zone.records)
    .map_err(|errors| format!("the scanner cannot read {label}:\n{errors}"))
}

/// A record reduced to what must match: lowercased owner, class, type,
/// TTL (unless `None`) and canonical RDATA.
type Key = (Vec<u8>, u16, u16, Option<u32>, Vec<u8>);

fn key(record: &Record, with_ttl: bool) -> Key {
    let mut owner = record.owner;
    owner.make_lowercase();
    (
        owner.as_bytes().to_vec(),
        record.class.0,
        record.rtype.0,
        with_ttl.then_some(record.ttl),
        canonical_rdata(record.rtype, &record.rdata).into_owned(),
    )
}

fn keys(records: &[Record], with_ttl: bool) -> BTreeSet<Key> {
    records.iter().map(|record| key(record, with_ttl)).collect()
}

/// Reports the records in one set and not the other, printed.
fn set_difference(
    left: &BTreeSet<Key>,
    right: &BTreeSet<Key>,
    left_name: &str,
    right_name: &str,
) -> Vec<String> {
    let show = |key: &Key| {
        let owner = tern_wire::name::Name::from_wire(&key.0).map(|name| name.to_string());
        let mut rdata = String::new();
        tern_zone::print::write_rdata(tern_wire::types::RType(key.2), &key.4, &mut rdata);
        format!(
            "{} {:?} CLASS{} {} {rdata}",
            owner.unwrap_or_default(),
            key.3,
            key.1,
            tern_wire::types::RType(key.2)
        )
    };
    let mut problems = Vec::new();
    for only in left.difference(right) {
        problems.push(format!("only in {left_name}: {}", show(only)));
    }
    for only in right.difference(left) {
        problems.push(format!("only in {right_name}: {}", show(only)));
    }
    problems
}

/// One presentation line split into owner, TTL, class, type and RDATA,
/// whitespace between the first five fields ignored. Comments and blank
/// lines give `None`.
fn split_line(line: &str) -> Option<[String; 5]> {
    let line = line.trim_end();
    if line.is_empty() || line.starts_with(';') {
        return None;
    }
    let mut rest = line;
    let mut fields: [String; 5] = Default::default();
    for field in fields.iter_mut().take(4) {
        rest = rest.trim_start();
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        *field = rest[..end].to_string();
        rest = &rest[end..];
    }
    fields[4] = rest.trim_start().to_string();
    Some(fields)
}

fn compare_text(
    ours: &str,
    bind: &str,
    ignore_ttl: bool,
    case_duplicates: &BTreeSet<String>,
) -> Vec<String> {
    let normalize = |line: &str| {
        split_line(line).map(|mut fields| {
            if ignore_ttl {
                fields[1] = "*".to_string();
            }
            fields.join(" ")
        })
    };
    let mut counts: BTreeMap<String, i64> = BTreeMap::new();
    for line in bind.lines().filter_map(normalize) {
        *counts.entry(line).or_default() += 1;
    }
    for line in ours.lines().filter_map(normalize) {
        *counts.entry(line).or_default() -= 1;
    }
    let only_bind: Vec<&String> = counts
        .iter()
        .filter(|(_, &count)| count > 0)
        .map(|(line, _)| line)
        .collect();
    let only_ours: Vec<&String> = counts
        .iter()
        .filter(|(_, &count)| count < 0)
        .map(|(line, _)| line)
        .collect();
    let mut problems = Vec::new();
    for line in &only_bind {
        // BIND keeps an arbitrary spelling of records that differ only in
        // the case of an RDATA name; such a line may differ in case alone.
        let lower = line.to_ascii_lowercase();
        let case_only = case_duplicates.contains(&lower)
            && only_ours
                .iter()
                .any(|ours| ours.to_ascii_lowercase() == lower);
        if !case_only {
            problems.push(format!("BIND: {line}"));
        }
    }
    for line in &only_ours {
        let lower = line.to_ascii_lowercase();
        let case_only = case_duplicates.contains(&lower)
            && only_bind
                .iter()
                .any(|bind| bind.to_ascii_lowercase() == lower);
        if !case_only {
            problems.push(format!("tern: {line}"));
        }
    }
    problems
}

/// Lowercased text lines of the records that occur more than once in the
/// source once names are lowercased.
fn case_duplicate_lines(records: &[Record], ours: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<Key, usize> = BTreeMap::new();
    for record in records {
        *seen.entry(key(record, false)).or_default() += 1;
    }
    let duplicated: BTreeSet<(Vec<u8>, u16)> = seen
        .iter()
        .filter(|(_, &count)| count > 1)
        .map(|(key, _)| (key.0.clone(), key.2))
        .collect();
    ours.lines()
        .filter_map(|line| {
            let fields = split_line(line)?;
            let owner = NameBuf::from_text(fields[0].as_bytes(), None).ok()?;
            let mut lower = owner;
            lower.make_lowercase();
            let rtype = tern_wire::types::RType::from_text(fields[3].as_bytes())?;
            duplicated
                .contains(&(lower.as_bytes().to_vec(), rtype.0))
                .then(|| fields.join(" ").to_ascii_lowercase())
        })
        .collect()
}

/// Everything this test asserts about one zone; the problems found.
fn check_one(path: &str, origin_text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let file = corpora().join(path);
    let origin = origin_name(origin_text);
    let zone = match parse_file(&file, origin.as_name(), &Options::default()) {
        Ok(zone) => zone,
        Err(errors) => return vec![format!("does not load:\n{errors}")],
    };
    for diagnostic in check_zone(origin.as_name(), &zone.records) {
        if diagnostic.severity == Severity::Error {
            problems.push(format!("semantic check: {diagnostic}"));
        }
    }

    let mut ours = String::new();
    write_zone(&zone.records, &mut ours);
    let reread = match parse_text(&ours, "tern dump", &origin) {
        Ok(records) => records,
        Err(error) => return [problems, vec![error]].concat(),
    };
    // The round trip: the dump reads back to the records loaded, except
    // that an RRset takes one TTL (as BIND does, `tern_zone::ttl`).
    problems.extend(set_difference(
        &keys(&zone.records, false),
        &keys(&reread, false),
        "loaded",
        "dump",
    ));

    let directory = file.parent().expect("corpus files are in a directory");
    let file_name = file
        .file_name()
        .and_then(|name| name.to_str())
        .expect("UTF-8 file names");
    let (ok, bind_text, bind_errors) = run_tool(
        "named-checkzone",
        &[
            "-i",
            "local",
            "-k",
            "ignore",
            "-D",
            "-o",
            "-",
            origin_text,
            file_name,
        ],
        directory,
    );
    if !ok {
        problems.push(format!("named-checkzone rejects it:\n{bind_errors}"));
        return problems;
    }
    let bind = match parse_text(&bind_text, "named-checkzone output", &origin) {
        Ok(records) => records,
        Err(error) => return [problems, vec![error]].concat(),
    };

    let ttl_policy = TTL_POLICY_FILES.contains(&path);
    problems.extend(set_difference(
        &keys(&bind, !ttl_policy),
        &keys(&reread, !ttl_policy),
        "BIND",
        "tern",
    ));
    if ttl_policy {
        let (ok, nsd_text, nsd_errors) =
            run_tool("nsd-checkzone", &["-p", origin_text, file_name], directory);
        if !ok {
            problems.push(format!("nsd-checkzone rejects it:\n{nsd_errors}"));
            return problems;
        }
        match parse_text(&nsd_text, "nsd-checkzone -p output", &origin) {
            Ok(nsd) => {
                problems.extend(set_difference(
                    &keys(&nsd, true),
                    &keys(&reread, true),
                    "NSD",
                    "tern",
                ));
                if keys(&nsd, true) == keys(&bind, true) {
                    problems.push(
                        "listed in TTL_POLICY_FILES but BIND and NSD agree on its TTLs: remove it"
                            .to_string(),
                    );
                }
            }
            Err(error) => problems.push(error),
        }
    }

    if bind.is_empty() || reread.is_empty() {
        problems.push(format!(
            "nothing compared: BIND {} records, tern {}",
            bind.len(),
            reread.len()
        ));
    }
    eprintln!(
        "{path}: {} records loaded, {} dumped, {} from named-checkzone",
        zone.records.len(),
        reread.len(),
        bind.len()
    );
    let case_duplicates = case_duplicate_lines(&zone.records, &ours);
    for line in compare_text(&ours, &bind_text, ttl_policy, &case_duplicates) {
        problems.push(format!("text differs: {line}"));
    }
    problems
}

#[test]
fn dump_matches_named_checkzone_on_every_valid_corpus_zone() {
    let zones = valid_zones();
    assert!(
        zones.len() >= MIN_VALID_ZONES,
        "SOURCES.md lists {} zones as VALID (all 3), expected at least {MIN_VALID_ZONES}",
        zones.len()
    );
    for policy_file in TTL_POLICY_FILES {
        assert!(
            zones.iter().any(|(path, _)| path == policy_file),
            "{policy_file} is in TTL_POLICY_FILES but not a valid corpus zone"
        );
    }
    let mut report = String::new();
    for (path, origin) in &zones {
        let problems = check_one(path, origin);
        if !problems.is_empty() {
            report.push_str(&format!(
                "\n== {path} (origin {origin}): {} problems\n",
                problems.len()
            ));
            for problem in problems.iter().take(40) {
                report.push_str(&format!("  {problem}\n"));
            }
        }
    }
    assert!(report.is_empty(), "dump comparison failed:{report}");
}

#[test]
fn missing_tool_fails_with_install_hint() {
    let result = std::panic::catch_unwind(|| {
        run_tool("tern-no-such-reference-tool", &[], Path::new("."));
    });
    let payload = result.expect_err("a missing tool must fail the test");
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message.contains("scripts/install-test-deps.sh"),
        "{message}"
    );
}

//----------- RRset TTLs -----------------------------------------------------

/// Zones whose RRsets are written with several TTLs (issue 22), each read
/// by `named-checkzone -D`, by `tern dump` ([`write_zone`]) and by the
/// serving path ([`tern_zone::ttl::settle_ttls`]). After the common
/// head (5 lines), the records; `{dir}` stands for the directory of the
/// case's files.
const TTL_CASES: &[(&str, &str)] = &[
    ("duplicate", "www 600 A 192.0.2.80\nwww 100 A 192.0.2.80\n"),
    (
        "split",
        "www 600 A 192.0.2.80\nwww 600 A 192.0.2.81\nmail A 192.0.2.25\nwww 100 A 192.0.2.82\n",
    ),
    (
        "split-duplicate",
        "www 600 A 192.0.2.80\nmail A 192.0.2.25\nwww 100 A 192.0.2.80\n",
    ),
    (
        "split-ttl-directive",
        "www A 192.0.2.80\nmail A 192.0.2.25\n$TTL 900\nwww A 192.0.2.81\n",
    ),
    (
        "explicit-then-default",
        "www 600 A 192.0.2.80\nwww A 192.0.2.81\n",
    ),
    (
        "default-then-directive",
        "www A 192.0.2.80\n$TTL 900\nwww A 192.0.2.81\n",
    ),
    (
        "other-type-between",
        "www 600 A 192.0.2.80\nwww 300 TXT x\nwww 100 A 192.0.2.81\n",
    ),
    (
        "three-groups",
        "www 600 A 192.0.2.80\nmail A 192.0.2.25\nwww 100 A 192.0.2.81\n\
         mail A 192.0.2.26\nwww 900 A 192.0.2.82\n",
    ),
    (
        "differing-groups",
        "www 600 A 192.0.2.80\nwww 100 A 192.0.2.81\nmail A 192.0.2.25\n\
         www 900 A 192.0.2.82\nwww 50 A 192.0.2.83\n",
    ),
    (
        "duplicate-then-split",
        "www 600 A 192.0.2.80\nwww 100 A 192.0.2.80\nmail A 192.0.2.25\nwww 900 A 192.0.2.81\n",
    ),
    ("case", "www 600 A 192.0.2.80\nWWW 100 A 192.0.2.81\n"),
    (
        "origin-directive",
        "www 600 A 192.0.2.80\n$ORIGIN www.example.\n@ 100 A 192.0.2.81\n",
    ),
    (
        "glue-between",
        "sub 600 NS ns.sub\nns.sub 300 A 192.0.2.53\nsub 100 NS ns2.sub\nns2.sub A 192.0.2.54\n",
    ),
    (
        "not-glue-between",
        "sub 600 NS ns.sub\nns.sub A 192.0.2.53\nother A 192.0.2.9\nsub 100 NS ns2.sub\n",
    ),
    (
        "glue-groups",
        "sub 600 NS ns.sub\nns.sub 300 A 192.0.2.53\nns.sub 100 A 192.0.2.54\n\
         sub 100 NS ns2.sub\nns.sub 900 A 192.0.2.55\n",
    ),
    (
        "apex-glue",
        "@ 600 NS ns2\nns2 A 192.0.2.2\n@ 100 NS ns3\nns3 A 192.0.2.3\n",
    ),
    (
        "include",
        "www 600 A 192.0.2.80\n$INCLUDE {dir}/include.txt\nwww 100 A 192.0.2.81\n",
    ),
    (
        "generate-inside",
        "www 600 A 192.0.2.80\n$GENERATE 1-2 www 100 A 192.0.2.$\nwww 50 A 192.0.2.81\n",
    ),
    (
        "generate-twice",
        "$GENERATE 1-2 www 100 A 192.0.2.$\n$GENERATE 3-4 www 200 A 192.0.2.$\n",
    ),
    (
        "rrsig",
        "www 600 A 192.0.2.80\n\
         www 600 RRSIG A 8 2 300 20300101000000 20200101000000 1 example. AAAA\n\
         www 300 RRSIG TXT 8 2 300 20300101000000 20200101000000 1 example. AAAA\n\
         mail A 192.0.2.1\n\
         www 100 RRSIG A 8 2 300 20300101000000 20200101000000 2 example. AAAA\n\
         www 100 A 192.0.2.81\n",
    ),
];

/// The head of every case: 5 lines.
const TTL_HEAD: &str = "$ORIGIN example.\n$TTL 300\n@ SOA ns1 hostmaster 1 7200 3600 1209600 300\n  NS ns1\nns1 A 192.0.2.1\n";

/// The lines BIND warns "TTL set to prior TTL" at, from its standard error.
fn bind_ttl_warnings(errors: &str) -> Vec<u32> {
    errors
        .lines()
        .filter(|line| line.contains("TTL set to prior TTL"))
        .filter_map(|line| line.split(':').nth(1)?.trim().parse().ok())
        .collect()
}

/// Issue 22: for each case, the TTLs tern dumps and serves equal
/// `named-checkzone -D`'s, and `tern check` warns "differs" at the lines
/// BIND warns "TTL set to prior TTL" at.
#[test]
fn rrset_ttls_follow_named_checkzone() {
    let directory = std::env::temp_dir().join(format!("tern-ttl-cases-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    std::fs::write(directory.join("include.txt"), "www 50 A 192.0.2.82\n").unwrap();
    let origin = origin_name("example.");
    let mut report = String::new();
    for (name, body) in TTL_CASES {
        let file = directory.join(format!("{name}.zone"));
        let text = TTL_HEAD.to_string() + &body.replace("{dir}", &directory.to_string_lossy());
        std::fs::write(&file, text).unwrap();
        let file_text = file.to_string_lossy().into_owned();
        let (ok, bind_text, bind_errors) = run_tool(
            "named-checkzone",
            &[
                "-i", "local", "-k", "ignore", "-D", "-o", "-", "example.", &file_text,
            ],
            &directory,
        );
        assert!(ok, "{name}: named-checkzone rejects it:\n{bind_errors}");
        let bind = keys(
            &parse_text(&bind_text, "named-checkzone", &origin).unwrap(),
            true,
        );

        let zone = parse_file(&file, origin.as_name(), &Options::default()).unwrap();
        let mut ours = String::new();
        write_zone(&zone.records, &mut ours);
        let dumped = keys(&parse_text(&ours, "tern dump", &origin).unwrap(), true);

        let mut records = tern_zone::Records::new();
        tern_zone::scan_file(&file, origin.as_name(), &Options::default(), &mut records).unwrap();
        let warned: Vec<u32> = check_zone(origin.as_name(), &records)
            .iter()
            .filter(|diagnostic| diagnostic.message.contains(" differs from the TTL "))
            .map(|diagnostic| diagnostic.location.line)
            .collect();
        tern_zone::ttl::settle_ttls(&mut records);
        let served: Vec<Record> = records.iter().map(|record| record.to_record()).collect();
        let served = keys(&served, true);

        let mut problems = set_difference(&bind, &dumped, "BIND", "tern dump");
        problems.extend(set_difference(&bind, &served, "BIND", "tern serve"));
        let bind_warned = bind_ttl_warnings(&bind_errors);
        if warned != bind_warned {
            problems.push(format!(
                "tern check warns at {warned:?}, named-checkzone at {bind_warned:?}"
            ));
        }
        if !problems.is_empty() {
            report.push_str(&format!("\n== {name}\n  {}\n", problems.join("\n  ")));
        }
    }
    std::fs::remove_dir_all(&directory).unwrap();
    assert!(report.is_empty(), "RRset TTLs differ from BIND's:{report}");
}
