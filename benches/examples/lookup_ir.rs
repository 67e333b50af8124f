//! Instructions per query for callgrind: loads the `bench.` zone of
//! `lookup.rs` (10,000 hosts, or `HOSTS`) and answers one kind of query COUNT times.
//! Run it with COUNT 0 and COUNT 20000 under
//! `valgrind --tool=callgrind` and divide the difference by 20,000:
//!
//! ```sh
//! cargo build --release -p tern-benches --example lookup_ir
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/lookup_ir exact 20000
//! ```

use std::hint::black_box;

use tern_authority::{respond, Catalog, Options, Response, Transport};
use tern_wire::types::RType;

fn main() {
    let mut args = std::env::args().skip(1);
    let kind = args.next().unwrap_or_else(|| "exact".into());
    let count: usize = args.next().and_then(|c| c.parse().ok()).unwrap_or(0);
    // HOSTS (10,000 unless set) hosts; the names as in lookup.rs at
    // 10,000 (host4321, sub432), scaled with HOSTS.
    let hosts: usize = std::env::var("HOSTS")
        .ok()
        .and_then(|h| h.parse().ok())
        .unwrap_or(10_000);
    let n = hosts * 4321 / 10_000;
    let name = match kind.as_str() {
        "exact" => format!("host{n}.bench."),
        "nxdomain" => format!("nx{n}.bench."),
        "wildcard" => format!("w{n}.wild.bench."),
        "referral" => format!("www.sub{}.bench.", n / 10),
        other => panic!("unknown kind {other}"),
    };
    let zone = tern_benches::load_zone(b"bench.", &tern_benches::mixed_zone_text(hosts));
    let catalog = Catalog::new([zone]);
    let options = Options::default();
    let query = tern_benches::query(name.as_bytes(), RType::A, true);
    let mut out = vec![0u8; 65535];
    let mut sent = 0usize;
    for _ in 0..count {
        if let Response::Send(len) = respond(
            black_box(&catalog),
            black_box(&query),
            Transport::Udp,
            &options,
            &mut out,
        ) {
            sent += len;
        }
    }
    println!("{kind} {count} {sent}");
}
