//! Instructions per query for callgrind: loads the `bench.` zone of
//! `lookup.rs` (10,000 hosts) and answers one kind of query COUNT times.
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
    let (name, rtype): (&[u8], RType) = match kind.as_str() {
        "exact" => (b"host4321.bench.", RType::A),
        "nxdomain" => (b"nx4321.bench.", RType::A),
        "wildcard" => (b"w4321.wild.bench.", RType::A),
        "referral" => (b"www.sub432.bench.", RType::A),
        other => panic!("unknown kind {other}"),
    };
    let zone = tern_benches::load_zone(b"bench.", &tern_benches::mixed_zone_text(10_000));
    let catalog = Catalog::new([zone]);
    let options = Options::default();
    let query = tern_benches::query(name, rtype, true);
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
