//! SIGTERM, SIGINT and `tern stop`: the server stops, even with an idle
//! TCP client connected, logs its counters and exits 0 within 2 s.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::util::{ask, client, free_address, temp_dir, tern, Served, GOOD};

/// The promise: stopped and exited within this long after the signal. A
/// dhat-heap build writes its profile after the stop, symbolizing every
/// allocation site, which takes seconds in a debug build.
const STOP_WITHIN: Duration = if cfg!(feature = "dhat-heap") {
    Duration::from_secs(30)
} else {
    Duration::from_secs(2)
};

/// How the test asks the server to stop.
enum Stop {
    Signal(&'static str),
    Command,
}

/// `tern serve` of the zone files in `dir` (example.com among them), once
/// it answers: the server, its address and its control socket.
fn serve_zones(dir: &std::path::Path) -> (Served, std::net::SocketAddr, std::path::PathBuf) {
    let address = free_address();
    let socket = dir.join("tern.sock");
    let server = Served::start(
        dir,
        &[
            "--zones",
            dir.to_str().unwrap(),
            "--listen",
            &address.to_string(),
            "--socket",
            socket.to_str().unwrap(),
        ],
    );
    assert!(ask(&client(), address, 1, "www.example.com").is_some());
    (server, address, socket)
}

fn stops_on(how: Stop) {
    let name = match how {
        Stop::Signal(signal) => signal,
        Stop::Command => "command",
    };
    let dir = temp_dir(&format!("stop-{name}"));
    std::fs::write(dir.join("example.com.zone"), GOOD).unwrap();
    let (mut server, address, socket) = serve_zones(&dir);
    // An idle TCP connection, and one with half a message: neither may
    // hold the server up.
    let idle = TcpStream::connect(address).unwrap();
    let mut partial = TcpStream::connect(address).unwrap();
    partial.write_all(&[0, 40, 0xab]).unwrap();
    assert!(socket.exists());

    let signalled = Instant::now();
    match how {
        Stop::Signal(signal) => server.signal(signal),
        Stop::Command => {
            let out = tern()
                .arg("stop")
                .arg("--socket")
                .arg(&socket)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            assert_eq!(String::from_utf8_lossy(&out.stdout), "stopping\n");
        }
    }
    let status = server.wait_exit(STOP_WITHIN + Duration::from_secs(3));
    let elapsed = signalled.elapsed();
    let log = server.log_text();
    let status =
        status.unwrap_or_else(|| panic!("still running 5 s after the {name} stop:\n{log}"));
    assert!(status.success(), "exit status {status:?}:\n{log}");
    assert!(elapsed < STOP_WITHIN, "took {elapsed:?} to stop:\n{log}");
    assert!(log.contains("at shutdown: all cores: queries 1 "), "{log}");
    assert!(!socket.exists(), "the control socket file is left behind");
    drop((idle, partial));
}

#[test]
fn sigterm_exits_zero_within_two_seconds() {
    stops_on(Stop::Signal("TERM"));
}

#[test]
fn sigint_exits_zero_within_two_seconds() {
    stops_on(Stop::Signal("INT"));
}

#[test]
fn tern_stop_exits_zero_within_two_seconds() {
    stops_on(Stop::Command);
}

/// A zone of `records` address records, with `serial`: one that takes
/// seconds to load in a debug build.
fn big_zone(records: usize, serial: u32) -> String {
    let mut text = format!(
        "$TTL 300\n@ SOA ns hostmaster {serial} 3600 900 604800 300\n@ NS ns\nns A 192.0.2.1\n"
    );
    for i in 0..records {
        text.push_str(&format!("h{i} A 192.0.2.{}\n", i % 250 + 1));
    }
    text
}

/// Issue 22: SIGTERM during a reload stops at once. The reload of a large
/// zone runs on a thread of its own; the signal thread used to run it and
/// took SIGTERM only after it ended (minutes, for a large enough reload).
#[test]
fn sigterm_does_not_wait_for_a_reload() {
    let dir = temp_dir("stop-during-reload");
    std::fs::write(dir.join("example.com.zone"), GOOD).unwrap();
    std::fs::write(dir.join("big.test.zone"), big_zone(200_000, 1)).unwrap();
    let (mut server, _, _) = serve_zones(&dir);
    std::fs::write(dir.join("big.test.zone"), big_zone(200_001, 2)).unwrap();
    server.signal("HUP");
    assert!(
        server.wait_for_log("SIGHUP: reloading", 1),
        "{}",
        server.log_text()
    );
    let signalled = Instant::now();
    server.signal("TERM");
    let status = server.wait_exit(STOP_WITHIN + Duration::from_secs(10));
    let elapsed = signalled.elapsed();
    let log = server.log_text();
    assert!(
        status.is_some_and(|status| status.success()),
        "{status:?}:\n{log}"
    );
    assert!(elapsed < STOP_WITHIN, "took {elapsed:?} to stop:\n{log}");
    // The reload was still running when the server stopped: the stop did
    // not wait for it.
    assert!(!log.contains("reloaded:"), "{log}");
}
