//! The configuration file: errors name the key and line, the shipped
//! example is valid, and `tern check --config` checks the zones it names.

use crate::util::{repo, run, temp_dir, tern, GOOD};

/// Writes `text` as a configuration file and runs `tern check` on it.
fn check_config(name: &str, text: &str) -> (bool, String) {
    let dir = temp_dir(name);
    std::fs::create_dir_all(dir.join("zones")).unwrap();
    std::fs::write(dir.join("zones/example.com.zone"), GOOD).unwrap();
    let config = dir.join("tern.yaml");
    std::fs::write(&config, text).unwrap();
    run(tern().arg("check").arg("--config").arg(&config))
}

#[test]
fn unknown_keys_name_the_line() {
    let (ok, text) = check_config("unknown", "listen: ['127.0.0.1:5399']\nzonez: {}\n");
    assert!(!ok);
    assert!(text.contains("zonez") && text.contains("line 2"), "{text}");
    let (ok, text) = check_config("unknown-nested", "tcp:\n  idle-timeout: 5s\n  idle: 5s\n");
    assert!(!ok);
    assert!(text.contains("idle") && text.contains("line 3"), "{text}");
}

#[test]
fn bad_values_name_the_key_and_line() {
    let cases = [
        (
            "listen: ['127.0.0.1:53']\ncores: [0]\ntcp:\n  idle-timeout: 0s\n",
            "tcp.idle-timeout",
            4,
        ),
        ("udp-size: 70000\n", "udp-size", 1),
        ("# comment\ndriver: epoll\n", "driver", 2),
        ("cache:\n  entries: 10\n  bytes: 10Q\n", "cache.bytes", 3),
        ("log-level: verbose\n", "log-level", 1),
        ("listen:\n  - 127.0.0.1\n", "listen", 2),
        ("cores: '0,x'\n", "cores", 1),
        (
            "zones:\n  list:\n    - origin: a..b\n      file: f.zone\n",
            "origin",
            3,
        ),
    ];
    for (index, (text, key, line)) in cases.into_iter().enumerate() {
        let (ok, output) = check_config(&format!("bad-{index}"), text);
        assert!(!ok, "accepted:\n{text}");
        assert!(
            output.contains(key) && output.contains(&format!("line {line}")),
            "{key} at line {line} not named for:\n{text}\nin:\n{output}"
        );
    }
}

#[test]
fn a_valid_config_checks_its_zones() {
    let (ok, text) = check_config(
        "valid",
        "listen: ['127.0.0.1:5399', '[::1]:5399']\nzones:\n  directory: zones\n",
    );
    assert!(ok, "{text}");
    assert!(
        text.contains("configuration OK") && text.contains("1 zone(s) OK"),
        "{text}"
    );
    // A broken zone named by the configuration fails the check, located.
    let (ok, text) = check_config(
        "valid-bad-zone",
        "zones:\n  directory: zones\n  list:\n    - origin: other.test\n      file: missing.zone\n",
    );
    assert!(!ok, "{text}");
    assert!(text.contains("missing.zone"), "{text}");
}

#[test]
fn the_example_config_is_accepted() {
    let example = repo().join("docs/tern.example.yaml");
    let (ok, text) = run(tern().arg("check").arg("--config").arg(&example));
    assert!(ok, "{text}");
    assert!(text.contains("configuration OK"), "{text}");
    assert!(
        text.contains("zone(s) OK") && !text.contains("failed"),
        "{text}"
    );
}
