//! Serves a generated zone on one pinned core for a fixed time, then exits:
//! a fixed workload for profiling the server (callgrind, CPU time), with
//! no binary, config file or signal handling in the way.
//!
//! ```text
//! cargo run --release -p tern-server --example serve_for -- 127.0.0.1:5300 20 legacy
//! ```
//!
//! Arguments: listen address, seconds to serve, driver (`auto`, `iouring`
//! or `legacy`; default `auto`), and `nocache` to switch the answer cache
//! off (every UDP query then goes through `respond`). The zone `bench.` holds `www0` to
//! `www9999` (A), a wildcard `*.wild` and a CNAME `alias`; the core's
//! statistics are printed at exit.

use std::sync::Arc;
use std::time::Duration;

use tern_server::{Driver, Server, ServerConfig};

/// Names in the generated zone.
const NAMES: usize = 10_000;

fn main() {
    let mut args = std::env::args().skip(1);
    let listen = args.next().unwrap_or_else(|| "127.0.0.1:5300".to_string());
    let seconds: u64 = args.next().map_or(20, |s| s.parse().expect("seconds"));
    let driver = match args.next().as_deref() {
        None | Some("auto") => Driver::Auto,
        Some("iouring") => Driver::IoUring,
        Some("legacy") => Driver::Legacy,
        Some(other) => panic!("unknown driver {other}"),
    };

    let cache = args.next().as_deref() != Some("nocache");

    let mut text = String::from(
        "$ORIGIN bench.\n$TTL 300\n@ SOA ns hostmaster 1 7200 3600 1209600 300\n\
         @ NS ns\nns A 192.0.2.1\n*.wild A 192.0.2.2\nalias CNAME www1\n",
    );
    for i in 0..NAMES {
        text.push_str(&format!(
            "www{i} A 10.{}.{}.{}\n",
            i >> 16,
            (i >> 8) & 255,
            i & 255
        ));
    }
    let catalog = Arc::new(tern_testkit::catalog("bench.", &text));

    let mut config = ServerConfig::new(vec![listen.parse().expect("listen address")]);
    config.cores = vec![0];
    config.driver = driver;
    if !cache {
        config.cache.max_entries = 0;
    }
    let server = Server::start(config, catalog).expect("server starts");
    std::thread::sleep(Duration::from_secs(seconds));
    let handle = server.handle();
    for core in handle.stats() {
        eprintln!("{core}");
    }
    handle.shutdown();
    server.join().expect("clean shutdown");
}
