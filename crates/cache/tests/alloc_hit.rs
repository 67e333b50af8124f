//! The answer cache allocates nothing once made (STYLE R3, issue 12): not
//! on a hit, and not on a miss either, when the answer is written by
//! `respond` and inserted into a full cache that evicts to make room. One
//! profiler per process (it runs its own `main`): dhat's testing profiler
//! is global, so both checks share it and measure their own sections.

use tern_authority::{respond, Catalog, Options, Response, Transport, ZoneBuilder};
use tern_cache::{CacheKey, CacheLimits, ResponseCache};
use tern_wire::name::NameBuf;
use tern_wire::parse::MessageView;
use tern_wire::types::{RClass, RType};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// Distinct names in the miss flood: over thirty times what its cache
/// holds.
const FLOOD: usize = 10_000;

/// The flood's cache: 300 entries, which small answers reach first, and
/// 64 KiB, which large answers reach first.
const FLOOD_LIMITS: CacheLimits = CacheLimits {
    max_entries: 300,
    max_bytes: 64 << 10,
};

fn catalog() -> Catalog {
    let origin = NameBuf::from_text(b"example.", None).unwrap();
    let mut zone = ZoneBuilder::new(origin.as_name());
    let soa = [
        0, 0, 0, 0, 0, 1, 0, 0, 0, 60, 0, 0, 0, 60, 0, 0, 0, 60, 0, 0, 0, 60,
    ];
    zone.insert(origin.as_name(), RType::SOA, RClass::IN, 60, &soa)
        .unwrap();
    let www = NameBuf::from_text(b"www.example.", None).unwrap();
    zone.insert(www.as_name(), RType::A, RClass::IN, 300, &[192, 0, 2, 1])
        .unwrap();
    // `*.wild` A, and four TXT records of 200 octets for large answers.
    let wild = NameBuf::from_text(b"*.wild.example.", None).unwrap();
    zone.insert(wild.as_name(), RType::A, RClass::IN, 300, &[192, 0, 2, 7])
        .unwrap();
    for i in 0..4u8 {
        let mut txt = vec![199, b'0' + i];
        txt.resize(200, b'x');
        zone.insert(wild.as_name(), RType::TXT, RClass::IN, 300, &txt)
            .unwrap();
    }
    Catalog::new(vec![zone.finish().unwrap()])
}

fn key(query: &[u8]) -> Option<CacheKey> {
    let view = MessageView::parse(query).ok()?;
    let edns = view.edns().ok()?;
    CacheKey::from_query(&view, edns.as_ref())
}

/// The hit path as the server runs it: parse, EDNS, key, answer.
fn serve(cache: &mut ResponseCache, query: &[u8], out: &mut [u8]) -> Option<usize> {
    cache.answer(&key(query)?, query, 1232, out)
}

/// A query with an OPT (1232 octets, DO clear) for `name` (wire format).
fn query(id: u16, name: &[u8], qtype: RType) -> Vec<u8> {
    let mut query = vec![0, 0, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1];
    query[..2].copy_from_slice(&id.to_be_bytes());
    query.extend_from_slice(name);
    query.extend_from_slice(&qtype.0.to_be_bytes());
    query.extend_from_slice(&[0, 1]);
    query.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0]);
    query
}

/// Runs without libtest (`harness = false`): libtest's main thread records
/// the running test in a map *after* starting it, and on a loaded machine
/// that insert (4 allocations) landed inside the measured section. With our
/// own `main` nothing else runs in the process while it is measured.
fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    a_cache_hit_allocates_nothing();
    println!("a_cache_hit_allocates_nothing: 1 passed, 0 failed");
    a_miss_flood_into_a_full_cache_allocates_nothing();
    println!("a_miss_flood_into_a_full_cache_allocates_nothing: 1 passed, 0 failed");
}

fn a_cache_hit_allocates_nothing() {
    let catalog = catalog();
    let mut query = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1];
    query.extend_from_slice(b"\x03wWw\x07ExAmPlE\x00\x00\x01\x00\x01");
    query.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 0]);
    let mut out = vec![0u8; 65535];
    let mut cache = ResponseCache::new(CacheLimits::default());

    // Miss, slow path, insert: allocations allowed here.
    assert_eq!(serve(&mut cache, &query, &mut out), None);
    let Response::Send(len) = respond(
        &catalog,
        &query,
        Transport::Udp,
        &Options::default(),
        &mut out,
    ) else {
        panic!("answered");
    };
    assert!(cache.insert(key(&query).unwrap(), &out[..len]));
    let expected = out[4..len].to_vec();

    let before = dhat::HeapStats::get();
    let mut hits = 0;
    for id in 0..1000u16 {
        query[..2].copy_from_slice(&id.to_be_bytes());
        query[13] ^= 0x20; // flip the case of one letter each time
        if let Some(n) = serve(&mut cache, &query, &mut out) {
            hits += 1;
            assert_eq!(n, len);
            assert_eq!(&out[..2], &id.to_be_bytes());
        }
    }
    let after = dhat::HeapStats::get();
    assert_eq!(hits, 1000);
    dhat::assert_eq!(after.total_blocks, before.total_blocks);
    dhat::assert_eq!(after.total_bytes, before.total_bytes);
    // The tail after the question is the stored one.
    assert_eq!(&out[29..len], &expected[25..]);
}

/// A random-subdomain flood as the server meets it, every query a name not
/// asked before: key, the probe that misses, `respond`, the insert into a
/// cache that is full after its first 300 answers and then evicts for
/// every one: by entries while the answers are small (the first half), by
/// bytes once large ones come too. Cold cache: the cache is made, then one
/// miss warms `respond`'s per-thread state, then the flood is measured.
fn a_miss_flood_into_a_full_cache_allocates_nothing() {
    let catalog = catalog();
    let options = Options::default();
    // Every query made first: wildcard A answers and NXDOMAINs, then large
    // TXT answers (about 850 octets) among them.
    let queries: Vec<Vec<u8>> = (0..FLOOD)
        .map(|i| {
            let label = format!("r{i}");
            let mut name = vec![label.len() as u8];
            name.extend_from_slice(label.as_bytes());
            let kind = if i < FLOOD / 2 { i % 2 * 3 } else { i % 4 };
            let (suffix, qtype): (&[u8], _) = match kind {
                0 | 1 => (b"\x04wild\x07example\x00", RType::A),
                2 => (b"\x04wild\x07example\x00", RType::TXT),
                _ => (b"\x07example\x00", RType::A),
            };
            name.extend_from_slice(suffix);
            query(i as u16, &name, qtype)
        })
        .collect();
    let mut out = vec![0u8; 65535];
    let mut cache = ResponseCache::new(FLOOD_LIMITS);
    let warm_up = query(1, b"\x04warm\x07example\x00", RType::A);
    let Response::Send(_) = respond(&catalog, &warm_up, Transport::Udp, &options, &mut out) else {
        panic!("answered");
    };

    let before = dhat::HeapStats::get();
    let (mut stored, mut large, mut most_entries, mut most_bytes) = (0, 0, 0, 0);
    for query in &queries {
        let key = key(query).expect("cacheable");
        assert_eq!(cache.answer(&key, query, 1232, &mut out), None, "a miss");
        let Response::Send(len) = respond(&catalog, query, Transport::Udp, &options, &mut out)
        else {
            panic!("answered");
        };
        large += usize::from(len > 800);
        // Each name as if asked twice: once the cache is full the first
        // insert only marks the doorkeeper, the second evicts and stores.
        stored += usize::from(cache.insert(key, &out[..len]) || cache.insert(key, &out[..len]));
        most_entries = most_entries.max(cache.len());
        most_bytes = most_bytes.max(cache.bytes());
    }
    let after = dhat::HeapStats::get();
    assert_eq!(stored, FLOOD, "every answer stored");
    assert_eq!(large, FLOOD / 8, "the TXT answers are large");
    assert_eq!(most_entries, FLOOD_LIMITS.max_entries, "entries bound");
    assert!(most_bytes > FLOOD_LIMITS.max_bytes - 1024, "bytes bound");
    assert!(cache.len() < FLOOD_LIMITS.max_entries);
    assert!(cache.counters().evicted >= (FLOOD - FLOOD_LIMITS.max_entries) as u64);
    assert!(
        cache.counters().not_admitted > 0,
        "the doorkeeper was passed"
    );
    dhat::assert_eq!(after.total_blocks, before.total_blocks);
    dhat::assert_eq!(after.total_bytes, before.total_bytes);
}
