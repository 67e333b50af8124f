//! Zone load, per record: a generated zone of 100 000 A records (plus SOA,
//! NS and glue) scanned by tern-zone ([`tern_zone::parse_bytes`]), built by
//! [`tern_authority::ZoneBuilder`] (sort, node ids, flags, RDATA arena),
//! and both together, as `tern serve` loads a zone (minus the semantic
//! checks and the file read). Criterion reports records per second; the
//! time per record is its inverse.

use std::hint::black_box;

use criterion::{Criterion, SamplingMode, Throughput};

/// A records in the generated zone.
const RECORDS: usize = 100_000;

fn zone_load(c: &mut Criterion) {
    let text = tern_benches::big_zone_text(RECORDS);
    let parsed = tern_benches::scan_zone(b"big.", &text);
    let records = parsed.records.len() as u64;

    let mut group = c.benchmark_group("zone-load");
    group.throughput(Throughput::Elements(records));
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.bench_function("scan", |b| {
        b.iter(|| tern_benches::scan_zone(b"big.", black_box(&text)))
    });
    group.bench_function("build", |b| {
        b.iter(|| tern_benches::build_zone(b"big.", black_box(&parsed)))
    });
    group.bench_function("scan-and-build", |b| {
        b.iter(|| tern_benches::load_zone(b"big.", black_box(&text)))
    });
    group.finish();
}

fn main() {
    // What criterion_group!/criterion_main! expand to, without the
    // undocumented public function they generate.
    let mut criterion = Criterion::default().configure_from_args();
    zone_load(&mut criterion);
    criterion.final_summary();
}
