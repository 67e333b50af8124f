//! SIGHUP: changed zones are answered, a broken zone keeps its previous
//! version, and no query is lost while reloads happen under load.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::util::{
    ask, client, first_a, free_address, query, rcode, temp_dir, wait_for, write_atomically, Served,
    A, GOOD, SIGNAL_TIMEOUT,
};

/// A server over a zone directory, configured by a file in `dir`.
fn serve(dir: &Path, address: SocketAddr) -> Served {
    serve_with(dir, address, "")
}

/// [`serve`] with `extra` appended to the configuration file.
fn serve_with(dir: &Path, address: SocketAddr, extra: &str) -> Served {
    let config = dir.join("tern.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: ['{address}']\nzones:\n  directory: zones\n\
             control-socket: tern.sock\nlog-level: debug\n{extra}"
        ),
    )
    .unwrap();
    Served::start(dir, &["--config", config.to_str().unwrap()])
}

/// Whether `name` comes to resolve to `expected` within [`SIGNAL_TIMEOUT`]
/// (the cores switch catalogs asynchronously, within about a millisecond).
fn eventually(address: SocketAddr, name: &str, expected: [u8; 4]) -> bool {
    wait_for(SIGNAL_TIMEOUT, || resolve(address, name) == Some(expected))
}

/// Client sockets used to reach every core: SO_REUSEPORT spreads source
/// ports over the cores' sockets.
const CLIENTS: usize = 16;

/// The addresses `name` resolves to, asked from [`CLIENTS`] sockets.
fn resolve_from_many(address: SocketAddr, name: &str) -> Vec<Option<[u8; 4]>> {
    (0..CLIENTS)
        .map(|id| ask(&client(), address, id as u16, name).and_then(|answer| first_a(&answer)))
        .collect()
}

fn zone_dir(dir: &Path) -> PathBuf {
    let zones = dir.join("zones");
    std::fs::create_dir_all(&zones).unwrap();
    zones
}

/// The address `name` resolves to, asked once.
fn resolve(address: SocketAddr, name: &str) -> Option<[u8; 4]> {
    ask(&client(), address, 7, name).and_then(|answer| first_a(&answer))
}

#[test]
fn sighup_serves_the_changed_zone() {
    let dir = temp_dir("reload");
    let zones = zone_dir(&dir);
    std::fs::write(zones.join("example.com.zone"), GOOD).unwrap();
    std::fs::write(zones.join("example.org.zone"), GOOD).unwrap();
    let address = free_address();
    // Every core caches the old answer; each must empty its cache.
    let server = serve_with(&dir, address, "cores: all\n");
    assert_eq!(
        resolve_from_many(address, "www.example.com"),
        [Some([192, 0, 2, 2]); CLIENTS]
    );
    assert_eq!(resolve(address, "www.example.org"), Some([192, 0, 2, 2]));

    let changed = GOOD
        .replace("192.0.2.2", "192.0.2.99")
        .replace(" 1 2 3 4 5", " 2 2 3 4 5");
    write_atomically(&zones.join("example.com.zone"), &changed);
    // A zone added to the directory is served after the reload too, and
    // one removed from it no longer is.
    write_atomically(&zones.join("example.net.zone"), GOOD);
    std::fs::remove_file(zones.join("example.org.zone")).unwrap();
    server.signal("HUP");
    assert!(server.wait_for_log("reloaded:", 1), "{}", server.log_text());
    // Every core switches within about a millisecond of the reload.
    let switched = wait_for(SIGNAL_TIMEOUT, || {
        resolve_from_many(address, "www.example.com") == [Some([192, 0, 2, 99]); CLIENTS]
    });
    assert!(switched, "a core still answers the old data");
    assert_eq!(resolve(address, "www.example.net"), Some([192, 0, 2, 2]));
    let removed = ask(&client(), address, 9, "www.example.org").expect("an answer");
    assert_eq!(
        rcode(&removed),
        5,
        "example.org is no longer served: REFUSED"
    );
}

#[test]
fn a_broken_zone_keeps_its_previous_version() {
    let dir = temp_dir("reload-broken");
    let zones = zone_dir(&dir);
    std::fs::write(zones.join("example.com.zone"), GOOD).unwrap();
    std::fs::write(zones.join("example.org.zone"), GOOD).unwrap();
    let address = free_address();
    let server = serve(&dir, address);

    // example.com breaks (line 6: an unknown type); example.org changes.
    let broken = format!(
        "{}mail AAA 192.0.2.3\n",
        GOOD.replace("192.0.2.2", "192.0.2.66")
    );
    write_atomically(&zones.join("example.com.zone"), &broken);
    write_atomically(
        &zones.join("example.org.zone"),
        &GOOD.replace("192.0.2.2", "192.0.2.77"),
    );
    server.signal("HUP");
    assert!(server.wait_for_log("reloaded:", 1), "{}", server.log_text());
    let log = server.log_text();
    assert!(
        log.contains(" error: ") && log.contains("example.com.zone:6:"),
        "the zone error is not logged, located:\n{log}"
    );
    assert!(
        log.contains("zone example.com failed to load; its previous version"),
        "{log}"
    );
    assert!(eventually(address, "www.example.org", [192, 0, 2, 77]));
    assert_eq!(resolve(address, "www.example.com"), Some([192, 0, 2, 2]));

    // Fixed, it reloads; the previous version was only kept, not pinned.
    write_atomically(
        &zones.join("example.com.zone"),
        &GOOD.replace("192.0.2.2", "192.0.2.88"),
    );
    server.signal("HUP");
    assert!(server.wait_for_log("reloaded:", 2), "{}", server.log_text());
    assert!(eventually(address, "www.example.com", [192, 0, 2, 88]));
}

#[test]
fn a_broken_config_aborts_the_reload() {
    let dir = temp_dir("reload-config");
    let zones = zone_dir(&dir);
    std::fs::write(zones.join("example.com.zone"), GOOD).unwrap();
    let address = free_address();
    let server = serve(&dir, address);
    write_atomically(
        &zones.join("example.com.zone"),
        &GOOD.replace("192.0.2.2", "192.0.2.5"),
    );
    let config = dir.join("tern.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    write_atomically(&config, &format!("{text}bogus-key: 1\n"));
    server.signal("HUP");
    assert!(
        server.wait_for_log("reload aborted", 1),
        "{}",
        server.log_text()
    );
    assert!(
        server.log_text().contains("bogus-key"),
        "{}",
        server.log_text()
    );
    assert_eq!(resolve(address, "www.example.com"), Some([192, 0, 2, 2]));
    // A change that needs a restart is logged as such, and the rest reloads.
    let other = free_address();
    write_atomically(
        &config,
        &text.replace(&address.to_string(), &other.to_string()),
    );
    server.signal("HUP");
    assert!(server.wait_for_log("reloaded:", 1), "{}", server.log_text());
    assert!(
        server
            .log_text()
            .contains("listen changed in the configuration; it takes effect after a restart"),
        "{}",
        server.log_text()
    );
    assert!(eventually(address, "www.example.com", [192, 0, 2, 5]));
}

/// Names in the zone used under load: enough that each reload does real
/// work (parsing and building take milliseconds).
const LOAD_NAMES: usize = 2000;

/// Client threads, each with its own socket (so, likely, its own core).
const LOAD_CLIENTS: usize = 4;

/// Reloads sent while the clients are running.
const RELOADS: usize = 5;

/// Answers the clients receive (all together) before each reload and
/// after the last: the load is seen running, not assumed after a delay.
const ANSWERS_PER_ROUND: usize = 400;

/// Queries the client keeps in flight at once: enough to keep the server
/// busy, few enough that no socket buffer can overflow.
const WINDOW: usize = 16;

fn load_zone(address_byte: u8) -> String {
    let mut text = String::from(GOOD);
    for index in 0..LOAD_NAMES {
        text.push_str(&format!(
            "h{index} A 192.0.{}.{address_byte}\n",
            index % 256
        ));
    }
    text
}

#[test]
fn no_query_is_lost_during_reloads() {
    let dir = temp_dir("reload-load");
    let zones = zone_dir(&dir);
    std::fs::write(zones.join("example.com.zone"), load_zone(1)).unwrap();
    let address = free_address();
    let server = serve_with(&dir, address, "cores: all\n");

    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..LOAD_CLIENTS)
        .map(|_| {
            let (stop, answered) = (Arc::clone(&stop), Arc::clone(&answered));
            std::thread::spawn(move || send_continuously(address, &stop, &answered))
        })
        .collect();
    let answers_reach = |target: usize| {
        assert!(
            wait_for(SIGNAL_TIMEOUT, || answered.load(Ordering::Relaxed)
                >= target),
            "the clients got {} answers, {target} expected",
            answered.load(Ordering::Relaxed)
        );
    };
    for round in 0..RELOADS {
        answers_reach(answered.load(Ordering::Relaxed) + ANSWERS_PER_ROUND);
        let byte = u8::try_from(round + 2).unwrap();
        write_atomically(&zones.join("example.com.zone"), &load_zone(byte));
        server.signal("HUP");
        assert!(
            server.wait_for_log("reloaded:", round + 1),
            "{}",
            server.log_text()
        );
    }
    answers_reach(answered.load(Ordering::Relaxed) + ANSWERS_PER_ROUND);
    stop.store(true, Ordering::Relaxed);
    let outcome: Outcome = clients
        .into_iter()
        .map(|client| client.join().unwrap())
        .fold(Outcome::default(), |total, one| Outcome {
            sent: total.sent + one.sent,
            answered: total.answered + one.answered,
            bad: total.bad + one.bad,
        });
    assert!(
        outcome.sent >= ANSWERS_PER_ROUND * (RELOADS + 1),
        "too few queries to mean anything: {outcome:?}"
    );
    assert_eq!(outcome.answered, outcome.sent, "lost queries: {outcome:?}");
    assert_eq!(outcome.bad, 0, "answers that were not NOERROR: {outcome:?}");
    // The last reload's data is served.
    let last = u8::try_from(RELOADS + 1).unwrap();
    assert!(eventually(address, "h3.example.com", [192, 0, 3, last]));
}

#[derive(Debug, Default)]
struct Outcome {
    sent: usize,
    answered: usize,
    bad: usize,
}

/// Keeps [`WINDOW`] queries in flight until `stop`, then collects the
/// remaining answers. A query not answered within `ANSWER_TIMEOUT` is
/// lost. Bounded by the stop flag and one final timeout.
fn send_continuously(address: SocketAddr, stop: &AtomicBool, answered: &AtomicUsize) -> Outcome {
    let socket = client();
    let mut outcome = Outcome::default();
    let mut in_flight = 0usize;
    let mut buf = [0u8; 4096];
    let started = Instant::now();
    loop {
        let stopping = stop.load(Ordering::Relaxed) || started.elapsed() > SIGNAL_TIMEOUT * 6;
        while !stopping && in_flight < WINDOW {
            let id = (outcome.sent % 65536) as u16;
            let name = format!("h{}.example.com", outcome.sent % LOAD_NAMES);
            socket.send_to(&query(id, &name, A), address).unwrap();
            outcome.sent += 1;
            in_flight += 1;
        }
        if in_flight == 0 {
            return outcome;
        }
        match socket.recv_from(&mut buf) {
            Ok((len, _)) => {
                in_flight -= 1;
                outcome.answered += 1;
                answered.fetch_add(1, Ordering::Relaxed);
                if len < 12 || rcode(&buf[..len]) != 0 || first_a(&buf[..len]).is_none() {
                    outcome.bad += 1;
                }
            }
            // Nothing for ANSWER_TIMEOUT: whatever is in flight is lost.
            Err(_) => return outcome,
        }
    }
}
