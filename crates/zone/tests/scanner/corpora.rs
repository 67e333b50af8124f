//! The corpora: libzscanner pairs, zones the reference tools accept,
//! negative cases, SVCB presentation versus generic vectors.

use tern_zone::{Errors, ParsedZone, Record};

use crate::{corpus, hex, parse, parse_strict, parse_with};

//----------- libzscanner .in/.out pairs -------------------------------------

/// One expected result of Knot's zscanner-tool output.
#[derive(Debug, PartialEq, Eq)]
enum Expected {
    /// An accepted record: owner, class, TTL, type, RDATA, all hex.
    Record {
        owner: String,
        class: String,
        ttl: String,
        rtype: String,
        rdata: String,
    },
    /// A rejected record (the Knot code, for messages).
    Rejected(String),
}

/// Parses a `.out` file: blocks separated by `------`.
fn expected(out: &str) -> Vec<Expected> {
    let mut results = Vec::new();
    for block in out.split("------") {
        let mut fields = std::collections::HashMap::new();
        for line in block.lines().filter(|line| !line.trim().is_empty()) {
            let (key, value) = line.split_once('=').expect("KEY=value lines");
            fields.insert(key.to_string(), value.to_lowercase());
        }
        if fields.is_empty() {
            continue;
        }
        if let Some(code) = fields.get("WARNG").or(fields.get("ERROR")) {
            results.push(Expected::Rejected(code.clone()));
            continue;
        }
        results.push(Expected::Record {
            owner: fields["OWNER"].clone(),
            class: fields["CLASS"].clone(),
            ttl: fields["RRTTL"].clone(),
            rtype: fields["RTYPE"].clone(),
            rdata: fields["RDATA"].clone(),
        });
    }
    results
}

/// Our results for the same file, in line order.
fn actual(
    result: Result<ParsedZone, Errors>,
    records_when_failed: Vec<Record>,
) -> Vec<(u32, Expected)> {
    let mut results = Vec::new();
    let (records, errors) = match result {
        Ok(zone) => (zone.records, Vec::new()),
        Err(errors) => (records_when_failed, errors.errors),
    };
    for record in records {
        results.push((
            record.location.line,
            Expected::Record {
                owner: hex(record.owner.as_bytes()),
                class: format!("{:04x}", record.class.0),
                ttl: format!("{:08x}", record.ttl),
                rtype: format!("{:04x}", record.rtype.0),
                rdata: hex(&record.rdata),
            },
        ));
    }
    for error in errors {
        results.push((error.line, Expected::Rejected(error.to_string())));
    }
    results.sort_by_key(|(line, _)| *line);
    results
}

/// Runs one pair. The KO part makes the whole file fail, so the accepted
/// records are read again from the OK part alone (everything before the
/// `; KO` line), which must load without error.
fn zscanner_pair(stem: &str) {
    let input = corpus(&format!("knot/tests__libzscanner__data__{stem}.in"));
    let output = String::from_utf8(corpus(&format!(
        "knot/tests__libzscanner__data__{stem}.out"
    )))
    .unwrap();
    let text = String::from_utf8_lossy(&input).into_owned();
    let ok_part = match text.find("\n; KO") {
        Some(end) => &text[..end + 1],
        None => &text[..],
    };
    let ok_zone = parse_strict(ok_part.as_bytes(), "ok", ".")
        .unwrap_or_else(|errors| panic!("{stem}: OK part rejected:\n{errors}"));
    let full = parse_strict(&input, &format!("{stem}.in"), ".");
    let ours = actual(full, ok_zone.records);
    let theirs = expected(&output);
    for (index, wanted) in theirs.iter().enumerate() {
        let Some((line, got)) = ours.get(index) else {
            panic!("{stem}: result {index} missing; expected {wanted:?}");
        };
        match (wanted, got) {
            (Expected::Rejected(_), Expected::Rejected(_)) => {}
            _ => assert_eq!(got, wanted, "{stem}: result {index} (line {line})"),
        }
    }
    assert_eq!(
        ours.len(),
        theirs.len(),
        "{stem}: extra results: {:?}",
        &ours[theirs.len().min(ours.len())..]
    );
}

#[test]
fn zscanner_general() {
    zscanner_pair("00-0_general");
}

#[test]
fn zscanner_owner() {
    zscanner_pair("01_owner");
}

#[test]
fn zscanner_txt() {
    zscanner_pair("12_TXT");
}

#[test]
fn zscanner_type() {
    zscanner_pair("28_TYPE");
}

#[test]
fn zscanner_svcb() {
    zscanner_pair("57_SVCB");
}

//----------- Zones the reference tools accept -------------------------------

/// Loads a corpus zone and returns it, failing with all errors.
fn load(file: &str, origin: &str) -> ParsedZone {
    parse(&corpus(file), file, origin).unwrap_or_else(|errors| panic!("{file} rejected:\n{errors}"))
}

#[test]
fn valid_in_all_three_tools_load() {
    // SOURCES.md "VALID (all 3)", with the origins used there.
    let zones = [
        ("knot/tests-extra__data__flags.zone", "flags.", 0),
        ("knot/tests-extra__data__records.zone", "records.", 0),
        (
            "knot/tests-extra__tests__basic__nsec__data__example.zone.nsec",
            "example.",
            0,
        ),
        (
            "knot/tests-extra__tests__basic__nsec3__data__example.zone.nsec3",
            "example.",
            0,
        ),
        (
            "bind9/bin__tests__system__wildcard__ns1__example.db.in",
            "example.",
            0,
        ),
        (
            "bind9/bin__tests__system__masterfile__ns1__ttl1.db",
            "ttl1.",
            9,
        ),
        (
            "bind9/bin__tests__system__masterfile__ns1__ttl2.db",
            "ttl2.",
            9,
        ),
        ("domain/test-data__zonefiles__rfc1034-6-1-root.zone", ".", 0),
        (
            "domain/test-data__zonefiles__rfc1034-6-1-edu.zone",
            "EDU.",
            0,
        ),
        (
            "nsd/tpkg__cutest_qroot.tdir__unsigned.zone",
            "example.org.",
            0,
        ),
        (
            "nsd/tpkg__svcb.tdir__svcb.test-vectors-wf.zone",
            "test-vectors.",
            0,
        ),
        ("pdns/regression-tests__zones__wtest.com", "wtest.com.", 0),
    ];
    for (file, origin, count) in zones {
        let zone = load(file, origin);
        assert!(!zone.records.is_empty(), "{file}: no records");
        if count > 0 {
            assert_eq!(zone.records.len(), count, "{file}");
        }
    }
}

#[test]
fn valid_with_caveats_load() {
    // Accepted by BIND and NSD (Knot 3.2.6 is older than these features or
    // stricter about a class mnemonic), or valid with expired signatures.
    load("nsd/tpkg__cutest_qroot.tdir__root2.zone", ".");
    load(
        "bind9/bin__tests__system__checkzone__zones__good-svcb.db",
        "example.",
    );
    load(
        "ldns/test__25-ZONEMD.tpkg__A.4.The-URI.ARPA-Zone",
        "uri.arpa.",
    );
    // Knot and NSD accept 65,5xx-octet RDATA that BIND refuses.
    let zone = load("bind9/tests__dns__testdata__master__master16.data", "test.");
    assert!(zone
        .records
        .iter()
        .any(|record| record.rdata.len() > 65_000));
    let zone = load("bind9/tests__dns__testdata__master__master15.data", "test.");
    assert!(zone
        .records
        .iter()
        .any(|record| record.rdata.len() > 65_000));
}

#[test]
fn records_zone_details() {
    let zone = load("knot/tests-extra__data__records.zone", "records.");
    let find = |owner: &str, rtype: tern_wire::types::RType| {
        zone.records
            .iter()
            .filter(|record| {
                record.owner.to_string().eq_ignore_ascii_case(owner) && record.rtype == rtype
            })
            .map(|record| hex(&record.rdata))
            .collect::<Vec<_>>()
    };
    use tern_wire::types::RType;
    // 42 21 54 N 71 06 18 W -24m 30m: size 30 m (0x33), default precisions
    // 10 km (0x16) and 10 m (0x13); 2^31 +- 152,514,000 and 255,978,000
    // thousandths of a second; 10,000,000 - 2,400 cm.
    assert_eq!(
        find("loc.records.", RType::LOC)[0],
        "0033161389172dd070be15f000988d20"
    );
    // APL 1:192.168.32.0/21 !1:192.168.38.0/28 (RFC 3123 section 4).
    assert_eq!(
        find("apl.records.", RType::APL)[0],
        "00011503c0a82000011c83c0a826"
    );
    assert_eq!(find("eui48.records.", RType::EUI48), ["00005e00532a"]);
    assert_eq!(find("nid.records.", RType::NID), ["000a00144fffff20ee64"]);
    assert_eq!(find("empty.records.", RType(999)), [""]);
    // Case of names inside RDATA is kept.
    assert_eq!(
        find("upper-case.records.", RType::MX),
        ["000a044d61694c077265636f72647300"]
    );
}

//----------- Negative cases -------------------------------------------------

/// Asserts that a corpus file is rejected and that an error is on `line`.
fn rejected_at(file: &str, origin: &str, line: u32, includes: &[(&str, Vec<u8>)]) -> Errors {
    let errors = match parse_with(&corpus(file), file, origin, includes) {
        Ok(_) => panic!("{file} was accepted"),
        Err(errors) => errors,
    };
    assert!(
        errors.errors.iter().any(|error| error.line == line),
        "{file}: no error on line {line}:\n{errors}"
    );
    for error in &errors.errors {
        assert!(error
            .to_string()
            .starts_with(&format!("{file}:{}:", error.line)));
        assert!(error.col >= 1);
    }
    errors
}

#[test]
fn negative_cases_are_located() {
    rejected_at(
        "nsd/tpkg__parsezone.tdir__heap-buffer-overflow",
        "example.com.",
        1,
        &[],
    );
    rejected_at(
        "nsd/tpkg__zonec_tests.tdir__zonec_tests.offbyone",
        "example.net.",
        13,
        &[],
    );
    // The second key123 is on line 9.
    rejected_at(
        "nsd/tpkg__svcb.tdir__svcb.failure-cases-01",
        "failure-cases.",
        9,
        &[],
    );
    rejected_at(
        "nsd/tpkg__svcb.tdir__svcb.failure-cases-10",
        "failure-cases.",
        9,
        &[],
    );
    rejected_at(
        "bind9/bin__tests__system__checkzone__zones__bad2.db",
        "example.",
        8,
        &[],
    );
    rejected_at(
        "bind9/bin__tests__system__checkzone__zones__bad-generate-range.db",
        "example.",
        7,
        &[],
    );
    rejected_at(
        "bind9/bin__tests__system__checkzone__zones__badttl.db",
        "example.",
        1,
        &[],
    );
    rejected_at(
        "bind9/bin__tests__system__checkzone__zones__bad-svcb-alpn1.db",
        "example.",
        6,
        &[],
    );
    // The padded hash "CPNMU===" is on line 9 of the record spanning 8-10.
    rejected_at(
        "bind9/bin__tests__system__checkzone__zones__bad-nsec3-padded.db",
        "example.",
        9,
        &[],
    );
    rejected_at(
        "bind9/tests__dns__testdata__master__master5.data",
        "test.",
        8,
        &[],
    );
    rejected_at(
        "bind9/bin__tests__system__unknown__ns1__broken1.db",
        "broken1.",
        12,
        &[],
    );
    let errors = rejected_at(
        "bind9/bin__tests__system__unknown__ns1__broken4.db",
        "broken4.",
        12,
        &[],
    );
    assert!(
        errors.to_string().contains("compression pointer"),
        "{errors}"
    );
}

#[test]
fn invalid_zones_point_at_the_first_problem() {
    // Reference tools' first errors, from SOURCES.md.
    let errors = rejected_at(
        "hickory-dns/tests__test-data__test_configs__example.com.zone",
        "example.com.",
        14,
        &[(
            "hickory-dns/include.example.com.zone",
            corpus("hickory-dns/tests__test-data__test_configs__include.example.com.zone"),
        )],
    );
    assert!(
        errors.errors[0]
            .message
            .contains("unknown record type \"ANAME\""),
        "{errors}"
    );
    // NSD's rr-test zone: NSD's first error is SINK on line 69.
    let errors = rejected_at("nsd/tpkg__rr-test.tdir__rr-test.zone", "blaat.nl.", 69, &[]);
    assert!(
        errors
            .to_string()
            .contains("rr-test.zone:69:6: unknown record type \"SINK\""),
        "{errors}"
    );
}

//----------- SVCB: presentation form equals generic form --------------------

#[test]
fn svcb_presentation_vectors_equal_generic_vectors() {
    let wire = load(
        "nsd/tpkg__svcb.tdir__svcb.test-vectors-wf.zone",
        "test-vectors.",
    );
    let text = String::from_utf8(corpus("nsd/tpkg__svcb.tdir__svcb.test-vectors-pf.zone")).unwrap();
    // The presentation file also uses keys newer than ours (ohttp is ours;
    // tls-supported-groups, docpath, pvd and oots are not): each entry is
    // read alone, entries with those keys must fail, all others must load
    // and equal their RFC 3597 twin.
    let unsupported = ["tls-supported-groups", "docpath", "pvd", "oots"];
    let mut compared = 0;
    for (entry, result) in parse_each_entry(&text) {
        let newer = unsupported.iter().any(|key| entry.contains(key));
        match result {
            Err(errors) => assert!(newer, "rejected:\n{entry}\n{errors}"),
            Ok(records) => {
                assert!(
                    !newer || entry.contains("dohpath"),
                    "accepted an unknown key:\n{entry}"
                );
                for record in records {
                    let twin = wire.records.iter().find(|other| {
                        other.owner == record.owner
                            && other.rtype == record.rtype
                            && other.rdata == record.rdata
                    });
                    assert!(
                        twin.is_some(),
                        "no generic twin for {entry}: {}",
                        hex(&record.rdata)
                    );
                    compared += 1;
                }
            }
        }
    }
    assert!(compared >= 23, "only {compared} SVCB records compared");
}

/// Splits a zone text into entries (lines outside parentheses; the vector
/// files keep comments free of parentheses) and parses each alone, after
/// the `$` directives, keeping only SVCB and HTTPS records.
fn parse_each_entry(text: &str) -> Vec<(String, Result<Vec<Record>, Errors>)> {
    let mut results = Vec::new();
    let mut header = String::new();
    let mut entry = String::new();
    let mut depth = 0i32;
    for line in text.lines() {
        let code = line.split(';').next().unwrap_or("");
        if code.starts_with('$') {
            header.push_str(line);
            header.push('\n');
            continue;
        }
        depth += code.matches('(').count() as i32 - code.matches(')').count() as i32;
        entry.push_str(line);
        entry.push('\n');
        if depth == 0 {
            if entry.contains("SVCB") || entry.contains("HTTPS") {
                let zone_text = format!("{header}{entry}");
                let result = parse(zone_text.as_bytes(), "entry", "test-vectors.").map(|zone| {
                    zone.records
                        .into_iter()
                        .filter(|record| {
                            matches!(
                                record.rtype,
                                tern_wire::types::RType::SVCB | tern_wire::types::RType::HTTPS
                            )
                        })
                        .collect()
                });
                results.push((entry.clone(), result));
            }
            entry.clear();
        }
    }
    results
}
