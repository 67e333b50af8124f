//! Cache hit: answering from tern-cache's pre-serialized answers instead
//! of walking the zone. `hit` is the whole per-query work a core does on a
//! hit: parse the query and its EDNS, build the [`CacheKey`] (lowercasing
//! the name), and [`ResponseCache::answer`] (hash, probe, three copies);
//! `answer-only` is the last step alone. Compare with `lookup/*`, which is
//! the miss path for the same queries.
//!
//! `cache-miss` is the cache's share of a random-subdomain flood: every
//! query a name not asked before, into a full cache. `insert` is
//! [`ResponseCache::insert`] of an answer already written (the key made,
//! an older entry evicted to make room); `miss+insert` adds what the server
//! does first for such a query: parse, key, the probe that misses. The
//! answers (wildcard answers and NXDOMAINs of the zone, two sizes) are
//! written by `respond` beforehand, [`FLOOD`] of them, asked in turn: the
//! cache holds [`HOSTS`], so each is long gone when its turn comes again.

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

/// Distinct names of the `cache-miss` flood: ten times what the cache
/// holds.
const FLOOD: usize = 10 * HOSTS;

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

fn cache_miss(c: &mut Criterion) {
    let zone = tern_benches::load_zone(b"bench.", &tern_benches::mixed_zone_text(HOSTS));
    let catalog = Catalog::new([zone]);
    let options = Options::default();
    let mut out = vec![0u8; 65535];
    let flood: Vec<(Vec<u8>, Vec<u8>)> = (0..FLOOD)
        .map(|i| {
            let name = match i % 2 {
                0 => format!("r{i}.wild.bench."),
                _ => format!("r{i}.bench."),
            };
            let query = tern_benches::query(name.as_bytes(), RType::A, true);
            let Response::Send(len) = respond(&catalog, &query, Transport::Udp, &options, &mut out)
            else {
                panic!("{name} is answered");
            };
            (query, out[..len].to_vec())
        })
        .collect();
    let limits = CacheLimits {
        max_entries: HOSTS,
        ..CacheLimits::default()
    };
    let mut group = c.benchmark_group("cache-miss");
    group.throughput(Throughput::Elements(1));
    for label in ["insert", "miss+insert"] {
        let mut cache = ResponseCache::new(limits);
        // Full before timing: every insert timed evicts.
        for (query, answer) in &flood[FLOOD - HOSTS..] {
            assert!(cache.insert(key(query), answer));
        }
        assert_eq!(cache.len(), HOSTS);
        let mut next = 0;
        group.bench_function(label, |b| {
            b.iter(|| {
                let (query, answer) = &flood[next];
                next = (next + 1) % FLOOD;
                let view = MessageView::parse(black_box(query)).expect("parses");
                let edns = view.edns().expect("valid EDNS");
                let key = CacheKey::from_query(&view, edns.as_ref()).expect("cacheable");
                if label == "miss+insert" {
                    let miss = cache.answer(&key, query, LIMIT, &mut out);
                    debug_assert_eq!(miss, None);
                }
                cache.insert(key, black_box(answer))
            })
        });
        assert_eq!(cache.len(), HOSTS);
    }
    group.finish();
}

fn main() {
    // What criterion_group!/criterion_main! expand to, without the
    // undocumented public function they generate.
    let mut criterion = Criterion::default().configure_from_args();
    cache_hit(&mut criterion);
    cache_miss(&mut criterion);
    criterion.final_summary();
}
