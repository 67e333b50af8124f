//! Names: lowercasing a received name once ([`LowerNameBuf::from_name`],
//! what every lookup and cache key starts from), case-insensitive equality
//! and RFC 4034 canonical order.

use std::hint::black_box;

use criterion::{Criterion, Throughput};
use tern_wire::name::{LowerNameBuf, NameBuf};

fn name(text: &[u8]) -> NameBuf {
    NameBuf::from_text(text, None).expect("a valid name")
}

fn names(c: &mut Criterion) {
    let short = name(b"HoSt1234.BeNcH.");
    let long = name(b"A.Long.Name.With.Ten.Labels.In.A.Deep.Zone.example.COM.");
    let mut group = c.benchmark_group("names");
    group.throughput(Throughput::Elements(1));

    group.bench_function("lowercase-short", |b| {
        b.iter(|| LowerNameBuf::from_name(black_box(short.as_name())))
    });
    group.bench_function("lowercase-long", |b| {
        b.iter(|| LowerNameBuf::from_name(black_box(long.as_name())))
    });

    let lower = name(b"host1234.bench.");
    group.bench_function("eq-ignore-case", |b| {
        b.iter(|| black_box(short.as_name()).eq_ignore_case(black_box(lower.as_name())))
    });

    // Siblings: the walk compares the shared suffix, then differs at the
    // first label.
    let left = name(b"host1234.bench.");
    let right = name(b"HOST1235.bench.");
    group.bench_function("canonical-cmp-siblings", |b| {
        b.iter(|| black_box(left.as_name()).canonical_cmp(black_box(right.as_name())))
    });
    let deep = name(b"a.long.name.with.ten.labels.in.a.deep.zone.example.com.");
    group.bench_function("canonical-cmp-equal-long", |b| {
        b.iter(|| black_box(long.as_name()).canonical_cmp(black_box(deep.as_name())))
    });
    group.finish();
}

fn main() {
    // What criterion_group!/criterion_main! expand to, without the
    // undocumented public function they generate.
    let mut criterion = Criterion::default().configure_from_args();
    names(&mut criterion);
    criterion.final_summary();
}
