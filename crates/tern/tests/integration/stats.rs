//! Per-core counters: `tern stats` reads them from the running server
//! over its control socket, SIGUSR1 logs them, and they count exactly the
//! queries sent.

use std::net::SocketAddr;
use std::path::Path;

use crate::util::{ask, client, free_address, rcode, run, temp_dir, tern, Served, GOOD};

/// Queries sent in the test: each is answered, so each is counted once.
const QUERIES: u64 = 40;

/// A number after `word ` in a counters line.
fn counter(line: &str, word: &str) -> u64 {
    let rest = line
        .split_once(&format!("{word} "))
        .unwrap_or_else(|| panic!("no {word:?} in {line:?}"))
        .1;
    rest.split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|digits| digits.parse().ok())
        .unwrap_or_else(|| panic!("no number after {word:?} in {line:?}"))
}

/// Sends `QUERIES` queries, half for a name that exists and half for one
/// that does not, each answered.
fn send_queries(address: SocketAddr) {
    let socket = client();
    for id in 0..QUERIES as u16 {
        let name = if id % 2 == 0 {
            "www.example.com"
        } else {
            "nope.example.com"
        };
        let answer = ask(&socket, address, id, name).expect("answered");
        assert_eq!(rcode(&answer), if id % 2 == 0 { 0 } else { 3 });
    }
}

fn start(dir: &Path, address: SocketAddr, cores: &str) -> Served {
    start_under(dir, address, cores, &[])
}

/// What `tern stats` prints for the server started in `dir`.
fn stats(dir: &Path) -> String {
    let (ok, text) = run(tern()
        .arg("stats")
        .arg("--config")
        .arg(dir.join("tern.yaml")));
    assert!(ok, "{text}");
    text
}

/// [`start`] under `wrapper` (see [`Served::start_under`]).
fn start_under(dir: &Path, address: SocketAddr, cores: &str, wrapper: &[&str]) -> Served {
    std::fs::create_dir_all(dir.join("zones")).unwrap();
    std::fs::write(dir.join("zones/example.com.zone"), GOOD).unwrap();
    let config = dir.join("tern.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: ['{address}']\nzones: {{directory: zones}}\ncontrol-socket: ctl.sock\n{cores}"
        ),
    )
    .unwrap();
    Served::start_under(dir, wrapper, &["--config", config.to_str().unwrap()])
}

#[test]
fn tern_stats_counts_the_queries_sent() {
    let dir = temp_dir("stats");
    let address = free_address();
    let _server = start(&dir, address, "cores: all\n");
    send_queries(address);

    let text = stats(&dir);
    let lines: Vec<&str> = text.lines().collect();
    let allowed = tern_server::allowed_cpus().unwrap();
    let cpus = allowed.len();
    assert_eq!(
        lines.len(),
        cpus + 1,
        "one line per core and a total:\n{text}"
    );
    for (cpu, line) in allowed.iter().zip(&lines) {
        assert!(line.starts_with(&format!("core {cpu}: ")), "{text}");
    }
    let total = lines[cpus];
    assert!(total.starts_with("all cores: "), "{text}");
    assert_eq!(counter(total, "queries"), QUERIES, "{text}");
    assert_eq!(counter(total, "answers"), QUERIES, "{text}");
    assert_eq!(counter(total, "noerror"), QUERIES / 2, "{text}");
    assert_eq!(counter(total, "nxdomain"), QUERIES / 2, "{text}");
    let per_core: u64 = lines[..cpus]
        .iter()
        .map(|line| counter(line, "queries"))
        .sum();
    assert_eq!(per_core, QUERIES, "{text}");
    // No rate-limit section: nothing limited, and the counters are shown.
    assert_eq!(counter(total, "limited"), 0, "{text}");
    assert_eq!(counter(total, "slipped"), 0, "{text}");
    // The counting allocator is installed (dhat's replaces it in a
    // dhat-heap build): each core has allocated at least its buffers.
    let allocations = counter(total, "allocations");
    assert_eq!(allocations > 0, !cfg!(feature = "dhat-heap"), "{text}");

    // The same through --socket.
    let (ok, again) = run(tern()
        .arg("stats")
        .arg("--socket")
        .arg(dir.join("ctl.sock")));
    assert!(ok, "{again}");
    assert_eq!(counter(again.lines().last().unwrap(), "queries"), QUERIES);
}

#[test]
fn sigusr1_logs_the_counters() {
    let dir = temp_dir("stats-usr1");
    let address = free_address();
    let server = start(&dir, address, "");
    send_queries(address);
    server.signal("USR1");
    assert!(
        server.wait_for_log("SIGUSR1: all cores: ", 1),
        "{}",
        server.log_text()
    );
    let log = server.log_text();
    let total = log
        .lines()
        .find(|line| line.contains("SIGUSR1: all cores: "))
        .unwrap();
    assert_eq!(counter(total, "queries"), QUERIES, "{log}");
    assert!(
        log.contains("SIGUSR1: core -: "),
        "the unpinned core's line:\n{log}"
    );
}

#[test]
fn tern_stats_without_a_server_says_so() {
    let dir = temp_dir("stats-none");
    let (ok, text) = run(tern()
        .arg("stats")
        .arg("--socket")
        .arg(dir.join("none.sock")));
    assert!(!ok);
    assert!(
        text.contains("none.sock") && text.contains("tern serve"),
        "{text}"
    );
}

/// `cores: all` is the CPUs the process may run on: under `taskset -c N`
/// one core, pinned to CPU N (not CPU 0, nor one per CPU of the machine).
#[test]
fn cores_all_is_the_process_affinity() {
    let cpu = *tern_server::allowed_cpus().unwrap().last().unwrap();
    let dir = temp_dir("stats-taskset");
    let address = free_address();
    let cpu_text = cpu.to_string();
    let server = start_under(&dir, address, "cores: all\n", &["taskset", "-c", &cpu_text]);
    send_queries(address);
    let text = stats(&dir);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "one core and a total:\n{text}");
    assert!(lines[0].starts_with(&format!("core {cpu}: ")), "{text}");
    assert_eq!(counter(lines[0], "queries"), QUERIES, "{text}");
    // The core's thread is pinned to that CPU alone.
    let tasks = format!("/proc/{}/task", server.child.id());
    let pinned: Vec<String> = std::fs::read_dir(&tasks)
        .unwrap()
        .filter_map(|task| {
            let task = task.ok()?.path();
            let name = std::fs::read_to_string(task.join("comm")).ok()?;
            (name.trim() == format!("tern-core-{cpu}")).then(|| {
                let status = std::fs::read_to_string(task.join("status")).unwrap();
                status
                    .lines()
                    .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
                    .unwrap()
                    .trim()
                    .to_string()
            })
        })
        .collect();
    assert_eq!(pinned, vec![cpu_text], "the tern-core-{cpu} thread's CPUs");
}
