//! Reads a zone file into [`tern_zone::Records`] ROUNDS times on THREADS
//! threads ([`tern_zone::Options::threads`]) and prints each reading's
//! wall time; run it under `perf stat -e task-clock` for the CPU time.
//!
//! ```sh
//! scripts/gen-bench-zone.py big --records 1000000 --zone /tmp/big.zone
//! cargo build --release -p tern-zone --example parse_file
//! perf stat -e task-clock target/release/examples/parse_file /tmp/big.zone big. 3 1
//! ```

use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, path, origin, rest @ ..] = args.as_slice() else {
        eprintln!("usage: parse_file FILE ORIGIN [ROUNDS [THREADS]]");
        std::process::exit(2);
    };
    let path = Path::new(path);
    let origin = tern_wire::name::NameBuf::from_text(origin.as_bytes(), None).expect("an origin");
    let number = |at: usize| {
        rest.get(at)
            .map_or(1, |text| text.parse().expect("a number"))
    };
    let (rounds, threads) = (number(0), number(1));
    let options = tern_zone::Options {
        threads,
        ..tern_zone::Options::default()
    };
    for _ in 0..rounds {
        let started = std::time::Instant::now();
        let data = std::fs::read(path).expect("the file reads");
        let mut records = tern_zone::Records::new();
        tern_zone::scan_bytes(
            &data,
            path,
            origin.as_name(),
            &options,
            &mut tern_zone::NoInclude,
            &mut records,
        )
        .expect("the zone parses");
        println!(
            "{} records in {:?}",
            tern_zone::RecordList::len(&records),
            started.elapsed()
        );
    }
}
