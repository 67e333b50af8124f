//! `$INCLUDE`, `$GENERATE`, `$ORIGIN` and TTL defaulting.

use std::path::Path;

use tern_wire::types::RType;
use tern_zone::{parse_file, Options, ParsedZone};

use crate::{corpus, hex, name, parse, parse_with};

/// `owner ttl type rdata-hex` per record, sorted.
fn summary(zone: &ParsedZone) -> Vec<String> {
    let mut lines: Vec<String> = zone
        .records
        .iter()
        .map(|record| {
            format!(
                "{} {} {} {}",
                record.owner,
                record.ttl,
                record.rtype,
                hex(&record.rdata)
            )
        })
        .collect();
    lines.sort();
    lines
}

//----------- $INCLUDE -------------------------------------------------------

/// BIND's include.db: the origin argument, and the owner and origin
/// restored after the include. Expected records from named-checkzone -D.
fn check_bind_include(zone: &ParsedZone) {
    let a = |owner: &str, address: [u8; 4]| format!("{owner} 300 A {}", hex(&address));
    let mut expected = vec![
        a("a.include.", [10, 0, 0, 1]),
        a("a.include.", [10, 0, 0, 99]),
        a("a.a.include.", [10, 0, 1, 1]),
        a("b.foo.a.include.", [10, 0, 2, 2]),
        a("b.include.", [10, 0, 0, 2]),
        a("a.b.include.", [10, 0, 1, 1]),
        a("c.b.include.", [10, 0, 0, 3]),
        a("b.foo.b.include.", [10, 0, 2, 2]),
        a("ns.include.", [127, 0, 0, 1]),
    ];
    expected.sort();
    let got: Vec<String> = summary(zone)
        .into_iter()
        .filter(|line| line.contains(" A "))
        .collect();
    assert_eq!(got, expected);
    assert_eq!(zone.files.len(), 3, "include.db and sub.db twice");
}

#[test]
fn include_in_memory_bind() {
    let zone = parse_with(
        &corpus("bind9/bin__tests__system__masterfile__ns1__include.db"),
        "ns1/include.db",
        "include.",
        &[(
            "ns1/sub.db",
            corpus("bind9/bin__tests__system__masterfile__ns1__sub.db"),
        )],
    )
    .unwrap();
    check_bind_include(&zone);
    let from_sub = zone
        .records
        .iter()
        .find(|record| record.owner == name("a.a.include."))
        .unwrap();
    assert_eq!(
        zone.files[from_sub.location.file as usize],
        Path::new("ns1/sub.db")
    );
    assert_eq!(from_sub.location.line, 1);
}

/// A temporary directory removed on drop.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let path = std::env::temp_dir().join(format!("tern-zone-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn include_on_disk_through_symlinks() {
    let dir = TempDir::new("include");
    let corpora = crate::corpora();
    for (link, target) in [
        (
            "include.db",
            "bind9/bin__tests__system__masterfile__ns1__include.db",
        ),
        (
            "sub.db",
            "bind9/bin__tests__system__masterfile__ns1__sub.db",
        ),
        (
            "example.com.zone",
            "hickory-dns/tests__test-data__test_configs__example.com.zone",
        ),
        (
            "include.example.com.zone",
            "hickory-dns/tests__test-data__test_configs__include.example.com.zone",
        ),
        (
            "example-in.db",
            "bind9/bin__tests__system__unknown__ns1__example-in.db",
        ),
        (
            "large.db",
            "bind9/bin__tests__system__unknown__ns1__large.db",
        ),
    ] {
        std::os::unix::fs::symlink(corpora.join(target), dir.0.join(link)).unwrap();
    }
    let origin = name("include.");
    let zone = parse_file(
        &dir.0.join("include.db"),
        origin.as_name(),
        &Options::default(),
    )
    .unwrap();
    check_bind_include(&zone);

    // RFC 3597 forms and a 48,000-octet RDATA over 3,000 lines, included.
    let origin = name("example.");
    let zone = parse_file(
        &dir.0.join("example-in.db"),
        origin.as_name(),
        &Options::default(),
    )
    .unwrap();
    let large = zone
        .records
        .iter()
        .find(|record| record.rtype == RType(45234))
        .unwrap();
    assert_eq!(large.rdata.len(), 48_000);
    assert_eq!(
        zone.files[large.location.file as usize],
        dir.0.join("large.db")
    );
    let a1 = zone
        .records
        .iter()
        .find(|record| record.owner == name("a1.example."))
        .unwrap();
    for owner in [
        "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10", "a11", "a12",
    ] {
        let record = zone
            .records
            .iter()
            .find(|record| record.owner == name(&format!("{owner}.example.")))
            .unwrap();
        assert_eq!(
            (record.rtype, &record.rdata),
            (RType::A, &a1.rdata),
            "{owner}"
        );
    }
    let txt = |owner: &str| {
        let record = zone
            .records
            .iter()
            .find(|record| record.owner == name(&format!("{owner}.example.")))
            .unwrap();
        hex(&record.rdata)
    };
    for owner in ["txt1", "txt2", "txt3", "txt4", "txt5", "txt6", "txt7"] {
        assert_eq!(txt(owner), "0568656c6c6f", "{owner}");
    }
    assert_eq!(txt("txt8"), "012301320430313435", "\"\\#\" is text");
    assert_eq!(
        txt("txt9"),
        "01230474657874",
        "\\# before a non-number is text"
    );

    // hickory's zone includes a file and uses ANAME, which the reference
    // tools reject, so only the error and the included file are checked.
    let origin = name("example.com.");
    let errors = parse_file(
        &dir.0.join("example.com.zone"),
        origin.as_name(),
        &Options::default(),
    )
    .unwrap_err();
    assert!(
        errors
            .errors
            .iter()
            .all(|error| error.message.contains("ANAME")),
        "{errors}"
    );
    assert_eq!(errors.errors.len(), 2);
}

#[test]
fn hickory_include_and_ttl_units() {
    let text = String::from_utf8(corpus(
        "hickory-dns/tests__test-data__test_configs__example.com.zone",
    ))
    .unwrap();
    let text = text
        .replace("ANAME", "CNAME")
        .replace("                CNAME   www\n", "");
    let zone = parse_with(
        text.as_bytes(),
        "zones/example.com.zone",
        "example.com.",
        &[(
            "zones/include.example.com.zone",
            corpus("hickory-dns/tests__test-data__test_configs__include.example.com.zone"),
        )],
    )
    .unwrap();
    let soa = &zone.records[0];
    assert_eq!(soa.ttl, 86_400);
    // 8h 120m 7d 24h.
    assert_eq!(
        &soa.rdata[soa.rdata.len() - 16..],
        hex_bytes("00007080 00001c20 00093a80 00015180")
    );
    let included = zone
        .records
        .iter()
        .find(|record| record.owner == name("include.alias.example.com."))
        .unwrap();
    assert_eq!(included.location.file, 1);
    assert_eq!(
        included.ttl, 86_400,
        "$TTL 24h still applies in the included file"
    );
    let short = zone
        .records
        .iter()
        .find(|record| record.owner == name("shortlived.example.com."))
        .unwrap();
    assert_eq!(short.ttl, 900);
}

fn hex_bytes(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text
        .bytes()
        .filter(|byte| !byte.is_ascii_whitespace())
        .collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

//----------- $GENERATE ------------------------------------------------------

#[test]
fn generate_matches_named_checkzone() {
    let zone = parse(
        &corpus("bind9/bin__tests__system__checkzone__zones__good-generate-modifier.db"),
        "good-generate-modifier.db",
        "example.",
    )
    .unwrap();
    // named-checkzone -D -o - example. good-generate-modifier.db
    let mut expected: Vec<String> = (0..12)
        .map(|index| format!("host{index}.example. 600 A {}", hex(&[1, 2, 3, index + 1])))
        .collect();
    let six = |last: u8| {
        format!(
            "{}{}",
            hex(&[0x20, 0x01, 0x0d, 0xb8]),
            hex(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, last])
        )
    };
    for (owner, last) in [("0.0.4", 0), ("1.0.4", 1), ("2.0.4", 2)] {
        expected.push(format!("{owner}.example. 600 AAAA {}", six(last)));
    }
    for (owner, last) in [
        ("0.3.c.f.f.f.f.f", 0),
        ("1.3.c.f.f.f.f.f", 1),
        ("2.3.c.f.f.f.f.f", 2),
    ] {
        expected.push(format!("{owner}.example. 600 AAAA {}", six(last)));
    }
    expected.push(format!("ns.example. 600 A {}", hex(&[192, 0, 2, 1])));
    expected.sort();
    let got: Vec<String> = summary(&zone)
        .into_iter()
        .filter(|line| line.contains(" A ") || line.contains(" AAAA "))
        .collect();
    assert_eq!(got, expected);
    let generated = zone
        .records
        .iter()
        .find(|record| record.owner == name("host5.example."))
        .unwrap();
    assert_eq!(
        generated.location.line, 6,
        "generated records point at their directive"
    );
}

#[test]
fn generate_with_ttl_class_and_multi_token_rhs() {
    let zone = parse(
        b"$GENERATE 1-2/1 mx$ 300 IN MX ${10} mail$.example.\n",
        "z",
        "example.",
    )
    .unwrap();
    assert_eq!(
        summary(&zone),
        [
            "mx1.example. 300 MX 000b056d61696c31076578616d706c6500",
            "mx2.example. 300 MX 000c056d61696c32076578616d706c6500",
        ]
    );
}

//----------- $ORIGIN and TTL defaults ---------------------------------------

/// The TTLs of the TXT records of a zone, by owner.
fn txt_ttls(zone: &ParsedZone) -> Vec<(String, u32)> {
    zone.records
        .iter()
        .filter(|record| record.rtype == RType::TXT)
        .map(|record| (record.owner.to_string(), record.ttl))
        .collect()
}

#[test]
fn ttl_defaults_follow_knot_and_nsd() {
    // Knot 3.2.6 and NSD 4.6.1 answer these TTLs (corpora/derived reference
    // answers); BIND would use the SOA MINIMUM (3) and the last explicit TTL.
    let zone = parse(
        &corpus("bind9/bin__tests__system__masterfile__ns1__ttl1.db"),
        "ttl1.db",
        "ttl1.",
    )
    .unwrap();
    assert_eq!(
        txt_ttls(&zone),
        [
            ("a.ttl1.".to_string(), 3600),
            ("b.ttl1.".to_string(), 2),
            ("c.ttl1.".to_string(), 3600),
            ("d.ttl1.".to_string(), 1),
            ("e.ttl1.".to_string(), 4),
            ("f.ttl1.".to_string(), 1),
        ]
    );
    let zone = parse(
        &corpus("bind9/bin__tests__system__masterfile__ns1__ttl2.db"),
        "ttl2.db",
        "ttl2.",
    )
    .unwrap();
    assert_eq!(
        txt_ttls(&zone),
        [
            ("a.ttl2.".to_string(), 3600),
            ("b.ttl2.".to_string(), 2),
            ("c.ttl2.".to_string(), 3600),
            ("d.ttl2.".to_string(), 3),
            ("e.ttl2.".to_string(), 2),
            ("f.ttl2.".to_string(), 3),
        ]
    );
    let ns = zone
        .records
        .iter()
        .find(|record| record.rtype == RType::NS)
        .unwrap();
    assert_eq!(ns.ttl, 3600, "an explicit SOA TTL does not carry over");
}

#[test]
fn owner_ttl_class_forms() {
    let zone = parse(
        b"$ORIGIN sub\n$TTL 1h30m\nwww IN 60 A 192.0.2.1\n 60 IN A 192.0.2.2\n IN A 192.0.2.3\n@ 1W IN TXT x\nx.example. CLASS1 TXT y\n",
        "z",
        "example.",
    )
    .unwrap();
    assert_eq!(
        summary(&zone),
        [
            "sub.example. 604800 TXT 0178",
            "www.sub.example. 5400 A c0000203",
            "www.sub.example. 60 A c0000201",
            "www.sub.example. 60 A c0000202",
            "x.example. 5400 TXT 0179",
        ]
    );
}
