//! A zone's new version costs the cache no allocation (issue 25): once the
//! table of changed names holds the names an update changes, entering
//! another version by name (`ResponseCache::invalidate_update`, once per
//! version on each core) allocates nothing, however many versions come.
//! Its own `main` (`harness = false`), as `alloc_hit`: nothing else runs
//! in the process while a section is measured.

use tern_cache::{CacheLimits, ResponseCache};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// The names an update changes: a TXT record's owner, and a name come or
/// gone (answers below it change too).
const NAMES: [(&[u8], bool); 2] = [
    (b"\x0f_acme-challenge\x07example\x03com\x00", false),
    (b"\x04host\x07example\x03com\x00", true),
];

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    versions_by_name_allocate_nothing();
    println!("versions_by_name_allocate_nothing: 1 passed, 0 failed");
}

fn versions_by_name_allocate_nothing() {
    let mut cache = ResponseCache::new(CacheLimits::default());
    // The first version makes the filter and the table's room.
    cache.invalidate_update(0, NAMES, Some(1));
    let mut serial = 1;
    // Two counts of versions: the same (none) for both. Before, one
    // allocation a version (the list of hashes), 16 and 1,024.
    for versions in [16, 1_024] {
        let before = dhat::HeapStats::get();
        for _ in 0..versions {
            serial += 1;
            cache.invalidate_update(0, NAMES, Some(serial));
            cache.invalidate_names(0, NAMES[..1].iter().copied());
        }
        let after = dhat::HeapStats::get();
        dhat::assert_eq!(
            after.total_blocks,
            before.total_blocks,
            "{} versions",
            versions
        );
    }
}
