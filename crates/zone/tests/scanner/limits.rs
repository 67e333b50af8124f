//! Hostile inputs: include cycles and depth, huge `$GENERATE`, over-long
//! names, very long lines, error floods, binary junk.

use std::time::{Duration, Instant};

use tern_wire::types::RType;
use tern_zone::{MAX_ERRORS, MAX_GENERATE_RECORDS, MAX_INCLUDE_DEPTH};

use crate::{parse, parse_with};

#[test]
fn include_of_itself_is_a_located_cycle() {
    let zone = b"@ SOA ns hm 1 2 3 4 5\n$INCLUDE self.zone\n";
    let errors = parse_with(
        zone,
        "self.zone",
        "example.",
        &[("self.zone", zone.to_vec())],
    )
    .unwrap_err();
    assert_eq!(errors.errors.len(), 1, "{errors}");
    let error = &errors.errors[0];
    assert_eq!(
        (error.file.as_str(), error.line, error.col),
        ("self.zone", 2, 10)
    );
    assert!(error.message.contains("cycle"), "{error}");
}

#[test]
fn include_chain_deeper_than_the_limit() {
    // f0 includes f1 includes ... f11: twelve files.
    let files: Vec<(String, Vec<u8>)> = (0..12)
        .map(|index| {
            let text = format!("a{index} A 192.0.2.1\n$INCLUDE f{}\n", index + 1);
            (format!("f{index}"), text.into_bytes())
        })
        .collect();
    let borrowed: Vec<(&str, Vec<u8>)> = files
        .iter()
        .map(|(path, data)| (path.as_str(), data.clone()))
        .collect();
    let errors = parse_with(&files[0].1, "f0", "example.", &borrowed).unwrap_err();
    assert_eq!(errors.errors.len(), 1, "{errors}");
    let error = &errors.errors[0];
    // The tenth file (f9) may not include an eleventh.
    assert_eq!(
        (error.file.as_str(), error.line),
        (format!("f{}", MAX_INCLUDE_DEPTH - 1).as_str(), 2)
    );
    assert!(error.message.contains("deep"), "{error}");
}

#[test]
fn include_of_a_missing_file() {
    let errors = parse_with(b"$INCLUDE \"no such\"\n", "z", "example.", &[]).unwrap_err();
    assert_eq!(
        errors.to_string(),
        "z:1:10: cannot include \"no such\": no such file"
    );
}

#[test]
fn huge_generate_is_refused_before_work() {
    let started = Instant::now();
    let errors = parse(
        b"$TTL 1\n$GENERATE 0-100000000 h$ A 192.0.2.1\n",
        "z",
        "example.",
    )
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(1));
    let error = &errors.errors[0];
    assert_eq!((error.line, error.col), (2, 11));
    assert!(
        error.message.contains(&MAX_GENERATE_RECORDS.to_string()),
        "{error}"
    );
    let zone = parse(b"$GENERATE 1-65536 h$ A 192.0.2.1\n", "z", "example.").unwrap();
    assert_eq!(zone.records.len() as u64, MAX_GENERATE_RECORDS);
}

#[test]
fn over_long_owner_is_rejected() {
    // 300 octets of labels.
    let owner = vec!["abcdefghi"; 30].join(".");
    let text = format!("{owner}. A 192.0.2.1\nok A 192.0.2.2\n");
    let errors = parse(text.as_bytes(), "z", "example.").unwrap_err();
    assert_eq!(errors.errors.len(), 1);
    assert_eq!((errors.errors[0].line, errors.errors[0].col), (1, 1));
    assert!(
        errors.errors[0].message.contains("255"),
        "{}",
        errors.errors[0]
    );
    // A label of 64 octets.
    let errors = parse(
        format!("{}. A 192.0.2.1\n", "a".repeat(64)).as_bytes(),
        "z",
        ".",
    )
    .unwrap_err();
    assert!(errors.errors[0].message.contains("63"));
}

#[test]
fn ten_megabyte_line_is_linear() {
    // One TXT record with 10 MB of unquoted text split into 255-octet
    // strings would exceed 65535 octets: the scan must still finish fast
    // and report the size.
    let mut text = b"big TXT ".to_vec();
    text.extend(std::iter::repeat_n(b'x', 10 << 20));
    text.push(b'\n');
    let started = Instant::now();
    let errors = parse(&text, "z", "example.").unwrap_err();
    assert!(
        errors.errors[0].message.contains("65535"),
        "{}",
        errors.errors[0]
    );
    // A 10 MB comment and a 10 MB quoted string on one line.
    let mut text = b"a TXT \"".to_vec();
    text.extend(std::iter::repeat_n(b'y', 10 << 20));
    text.extend_from_slice(b"\" ; ");
    text.extend(std::iter::repeat_n(b'(', 10 << 20));
    text.extend_from_slice(b"\nb A 192.0.2.1\n");
    let errors = parse(&text, "z", "example.").unwrap_err();
    assert_eq!(errors.errors.len(), 1);
    // 64 KB of hex on one line within the limit loads.
    let mut text = b"c TYPE65000 \\# 32768 ".to_vec();
    text.extend(std::iter::repeat_n(b'a', 65_536));
    text.push(b'\n');
    let zone = parse(&text, "z", "example.").unwrap();
    assert_eq!(
        (zone.records[0].rtype, zone.records[0].rdata.len()),
        (RType(65000), 32_768)
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn error_flood_is_capped() {
    let text = "x A 1.2.3\n".repeat(10_000);
    let errors = parse(text.as_bytes(), "z", "example.").unwrap_err();
    assert_eq!(errors.errors.len(), MAX_ERRORS);
    assert!(errors.truncated);
    assert_eq!(errors.errors[99].line, 100);
}

#[test]
fn binary_junk_never_panics() {
    // A simple deterministic generator over bytes that matter to the lexer.
    let alphabet = b" \t\r\n;()\"\\$@.*0123456789aAzZ#=,-:/\x00\xff";
    let mut state: u32 = 0x1234_5678;
    for _ in 0..2_000 {
        let length = (state % 200) as usize;
        let mut data = Vec::with_capacity(length);
        for _ in 0..length {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            data.push(alphabet[(state as usize) % alphabet.len()]);
        }
        tern_zone::fuzzing::scan(&data);
    }
}

#[test]
fn meta_types_and_other_classes_are_refused() {
    for (line, what) in [
        ("a AXFR \\# 0\n", "meta"),
        ("a OPT \\# 0\n", "meta"),
        ("a TYPE255 \\# 0\n", "meta"),
        ("a CH TXT x\n", "class"),
        ("a ANY A 192.0.2.1\n", "class"),
        ("a AAA ::1\n", "unknown record type \"AAA\""),
    ] {
        let errors = parse(line.as_bytes(), "z", "example.").unwrap_err();
        assert!(errors.errors[0].message.contains(what), "{line}: {errors}");
    }
}
