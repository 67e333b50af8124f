//! `check`, `dump` and a plain `serve`: flags, exit codes and located
//! messages.

use std::net::UdpSocket;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::{free_address, repo, run, temp_dir, tern, GOOD};

#[test]
fn check_accepts_the_shipped_zones() {
    let (ok, text) = run(tern().arg("check").arg("--zones").arg(repo().join("zones")));
    assert!(ok, "{text}");
    assert!(text.contains("1 zone(s) OK"), "{text}");
}

#[test]
fn check_rejects_with_located_errors() {
    let dir = temp_dir("check");
    let file = dir.join("bad.zone");
    std::fs::write(&file, format!("{GOOD}mail AAA 192.0.2.3\nwww CNAME ns\n")).unwrap();
    let (ok, text) = run(tern().arg("check").arg("example.com").arg(&file));
    assert!(!ok, "{text}");
    let located = format!("{}:6:", file.display());
    assert!(text.contains(&located), "no error at line 6 in:\n{text}");
    // The directory form reports the same zone by its file name.
    let (ok, text) = run(tern().arg("check").arg("--zones").arg(&dir));
    assert!(!ok && text.contains("bad.zone:6:"), "{text}");
}

#[test]
fn check_refuses_a_user_that_does_not_exist() {
    let dir = temp_dir("check-user");
    std::fs::write(dir.join("example.com.zone"), GOOD).unwrap();
    let config = dir.join("tern.yaml");
    let zones = format!("zones:\n  directory: {}\n", dir.display());
    std::fs::write(&config, format!("user: tern-no-such-user\n{zones}")).unwrap();
    let (ok, text) = run(tern().arg("check").arg("--config").arg(&config));
    assert!(!ok, "{text}");
    assert!(
        text.contains("user \"tern-no-such-user\" does not exist"),
        "{text}"
    );
    // root always exists: the same file with it passes.
    std::fs::write(&config, format!("user: root\n{zones}")).unwrap();
    let (ok, text) = run(tern().arg("check").arg("--config").arg(&config));
    assert!(ok, "{text}");
}

#[test]
fn check_reports_semantic_errors() {
    let dir = temp_dir("semantic");
    let file = dir.join("example.com.zone");
    std::fs::write(&file, format!("{GOOD}www TXT \"beside\"\nwww CNAME ns\n")).unwrap();
    let (ok, text) = run(tern().arg("check").arg("--zones").arg(&dir));
    assert!(!ok, "{text}");
    assert!(
        text.contains("example.com.zone:7:") && text.contains("CNAME"),
        "{text}"
    );
}

/// An RRset whose records carry different TTLs: `tern check` accepts the
/// zone with a warning at the file and line of the differing record, and
/// `tern serve` answers with the first record's TTL (as BIND).
#[test]
fn check_warns_about_differing_ttls_and_serve_uses_the_first() {
    let dir = temp_dir("ttls");
    let file = dir.join("example.com.zone");
    std::fs::write(&file, format!("{GOOD}txt 600 TXT a\ntxt 100 TXT b\n")).unwrap();
    let (ok, text) = run(tern().arg("check").arg("--zones").arg(&dir));
    assert!(ok, "{text}");
    let warning = format!(
        "{}:7:1: warning: txt.example.com.: TTL 100 differs from the TTL 600 of the TXT \
         record at line 6 before it; the RRset is served with TTL 600",
        file.display()
    );
    assert!(text.contains(&warning), "no {warning:?} in:\n{text}");

    let query = b"\x12\x34\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\
        \x03txt\x07example\x03com\x00\x00\x10\x00\x01";
    let answer = serve_and_ask(&dir, query);
    assert_eq!(
        &answer[..8],
        b"\x12\x34\x84\x00\x00\x01\x00\x02",
        "{answer:?}"
    );
    // Both records, each with TTL 600: owner pointer, type, class, TTL,
    // RDLENGTH, RDATA ("\x01a").
    let first_ttl = query.len() + 2 + 2 + 2;
    assert_eq!(&answer[first_ttl..first_ttl + 4], &600u32.to_be_bytes());
    let second_ttl = first_ttl + 4 + 2 + 2 + 2 + 2 + 2;
    assert_eq!(&answer[second_ttl..second_ttl + 4], &600u32.to_be_bytes());
}

#[test]
fn dump_prints_canonical_records() {
    let (ok, text) = run(tern()
        .arg("dump")
        .arg("example.com")
        .arg(repo().join("zones/example.com.zone")));
    assert!(ok, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("example.com.\t3600\tIN\tSOA\tns1.example.com. "),
        "{text}"
    );
    assert!(
        lines.contains(&"www.example.com.\t3600\tIN\tA\t192.0.2.80"),
        "{text}"
    );
}

#[test]
fn serve_answers_from_a_zone_directory() {
    let dir = temp_dir("serve");
    std::fs::write(dir.join("example.com.zone"), GOOD).unwrap();
    let query = b"\xab\xcd\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\
        \x03www\x07example\x03com\x00\x00\x01\x00\x01";
    let answer = serve_and_ask(&dir, query);
    assert_eq!(&answer[..4], b"\xab\xcd\x84\x00", "ID, QR+AA, NOERROR");
    assert_eq!(&answer[answer.len() - 4..], &[192, 0, 2, 2]);
}

/// Runs `tern serve --zones dir` until it answers `query` over UDP (the
/// first answer, within 10 s), then stops it.
fn serve_and_ask(dir: &std::path::Path, query: &[u8]) -> Vec<u8> {
    let addr = free_address();
    let mut child = tern()
        .arg("serve")
        .arg("--zones")
        .arg(dir)
        .arg("--listen")
        .arg(addr.to_string())
        .arg("--socket")
        .arg(dir.join("tern.sock"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut answer = None;
    while answer.is_none() && Instant::now() < deadline {
        client.send_to(query, addr).unwrap();
        let mut buf = [0u8; 512];
        if let Ok((len, _)) = client.recv_from(&mut buf) {
            answer = Some(buf[..len].to_vec());
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    answer.expect("tern serve did not answer within 10 s")
}
