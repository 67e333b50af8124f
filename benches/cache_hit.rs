//! Cache hit: answering from tern-cache's pre-serialized answers instead
//! of walking the zone. `hit` is the whole per-query work a core does on a
//! hit: parse the query and its EDNS, build the [`CacheKey`] (lowercasing
//! the name), and [`ResponseCache::answer`] (hash, probe, three copies);
//! `answer-only` is the last step alone. Compare with `lookup/*`, which is
//! the miss path for the same queries.

use std::hint::black_box;

use criterion::{Criterion, Throughput};
use tern_authority::{respond, Catalog, Options, Response, Transport};
use tern_cache::{CacheKey, CacheLimits, ResponseCache};
use tern_wire::parse::MessageView;
use tern_wire::types::RType;

/// Hosts in the zone, as in `scripts/bench-peers.sh` and `lookup.rs`.
const HOSTS: usize = 10_000;

/// The size limit of the answers (an EDNS client's 1232 octets).
const LIMIT: usize = 1232;

fn key(query: &[u8]) -> CacheKey {
    let view = MessageView::parse(query).expect("parses");
    let edns = view.edns().expect("valid EDNS");
    CacheKey::from_query(&view, edns.as_ref()).expect("cacheable")
}

fn cache_hit(c: &mut Criterion) {
    let zone = tern_benches::load_zone(b"bench.", &tern_benches::mixed_zone_text(HOSTS));
    let catalog = Catalog::new([zone]);
    let options = Options::default();
    let mut cache = ResponseCache::new(CacheLimits::default());
    let mut out = vec![0u8; 65535];
    // Fill the cache with every host's A answer, so that the probe runs in
    // a table of realistic size.
    for i in 0..HOSTS {
        let query = tern_benches::query(format!("host{i}.bench.").as_bytes(), RType::A, true);
        let Response::Send(len) = respond(&catalog, &query, Transport::Udp, &options, &mut out)
        else {
            panic!("host{i} is answered");
        };
        assert!(cache.insert(key(&query), &out[..len]), "host{i} is cached");
    }
    let cases: [(&str, &[u8], RType); 4] = [
        ("exact", b"host4321.bench.", RType::A),
        ("mixed-case", b"HoSt4321.BeNcH.", RType::A),
        ("nxdomain", b"nx4321.bench.", RType::A),
        ("referral", b"www.sub432.bench.", RType::A),
    ];
    let mut group = c.benchmark_group("cache-hit");
    group.throughput(Throughput::Elements(1));
    for (label, name, rtype) in cases {
        let query = tern_benches::query(name, rtype, true);
        let Response::Send(len) = respond(&catalog, &query, Transport::Udp, &options, &mut out)
        else {
            panic!("{label} is answered");
        };
        let expected = out[..len].to_vec();
        let _ = cache.insert(key(&query), &expected);
        // The hit writes what the slow path wrote (same ID, same case).
        assert_eq!(
            cache.answer(&key(&query), &query, LIMIT, &mut out),
            Some(expected.len()),
            "{label} hits"
        );
        assert_eq!(out[..expected.len()], expected[..], "{label}");
        group.bench_function(format!("{label}/hit"), |b| {
            b.iter(|| {
                let view = MessageView::parse(black_box(&query)).expect("parses");
                let edns = view.edns().expect("valid EDNS");
                let key = CacheKey::from_query(&view, edns.as_ref()).expect("cacheable");
                cache.answer(&key, &query, LIMIT, &mut out)
            })
        });
        let key = key(&query);
        group.bench_function(format!("{label}/answer-only"), |b| {
            b.iter(|| cache.answer(black_box(&key), black_box(&query), LIMIT, &mut out))
        });
    }
    group.finish();
}

fn main() {
    // What criterion_group!/criterion_main! expand to, without the
    // undocumented public function they generate.
    let mut criterion = Criterion::default().configure_from_args();
    cache_hit(&mut criterion);
    criterion.final_summary();
}
