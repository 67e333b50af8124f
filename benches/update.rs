//! A zone's new version after an UPDATE (tern-zones, issue 25), at 10,000
//! and 100,000 names: what the `#[ignore]`d tests `rebuild_cost` and
//! `window_timing` measured.
//!
//! `update`: an unsigned zone of A records (`update_zone`), a TXT at a
//! new name added, then deleted, in turn (so that the zone does not grow),
//! the engine's records laid over the served version as the update thread
//! keeps them (`ZoneRecords::over`, `versions::records_over`). All three
//! rows read those records (through the served version), and
//! `engine+patch` also times the laying over each new version; until
//! 2026-11-29 they read a copy of every record
//! (`ZoneRecords::from_records`), so docs/benchmarks.md's figures from
//! before are not comparable with later ones.
//!
//! - `engine`: the UPDATE parsed and applied by the engine
//!   (`tern_update::update`), its difference as the journal keeps it;
//! - `engine+patch`: that, then the next version made
//!   (`tern_zones::update::next_version`, a patch of the version before)
//!   and the records laid over it afresh, as the update thread does;
//!   a version whose tables' unused space passes an eighth of them is
//!   replaced by the built zone outside the timed part (the update thread
//!   builds it whole at a quarter: the `build` figure, spread over the
//!   updates that made the garbage);
//! - `build`: the whole build a patch replaces
//!   (`tern_zones::update::zone_of`), from the records laid over the
//!   served version (read through it).
//!
//! `signed-update`: a zone tern signed (`SignedZone`: NSEC or NSEC3, one
//! key made in a temporary directory the bench removes), one UPDATE (a TXT
//! at a new name, or a delegation made: an NS RRset at a new name), signed
//! by `bench_api::sign_update` as the update thread signs it (`window-*`:
//! the signing, the splice, the patch of the served version), and, for
//! the new name, the whole zone signed again as before windows
//! (`whole-*`: the records listed and `tern_zones::signing::sign_again`,
//! without building the version; what it made is dropped outside the
//! timed part). Each signing starts from the same served version. Before
//! a `window-*` row is timed, its update is signed once and checked
//! (`versions::window_check`: no signed records kept, few read, signed
//! and copied; its cost printed): the bench panics if it was signed whole
//! at that size. The NSEC3 delegation is signed as a window on main (46
//! records read, 3 RRSIGs made), but the served version's NSEC3 patch
//! behind it grew with the zone when `window_timing` last timed it: that
//! row shows whether it still does.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode};
use tern_authority::Zone;
use tern_benches::versions::{
    engine_update, next_version, records_over, sign_whole, signed_update, update_messages,
    update_zone, window_check, SignedChange, SignedZone, SIZES,
};
use tern_zones::update::bench_api;

fn update(c: &mut Criterion) {
    let mut group = c.benchmark_group("update");
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_millis(500));
    let messages = update_messages();
    for count in SIZES {
        let (records, built) = update_zone(count);
        group.sample_size(50);
        group.measurement_time(Duration::from_secs(1));
        // Each bench's state is made here, once: criterion calls the
        // closure for the warm-up and for each sample, and each call goes
        // on from where the one before left the zone.
        let mut engine_records = records.clone();
        let mut engine_step = 0usize;
        group.bench_function(BenchmarkId::new("engine", count), |b| {
            b.iter_with_large_drop(|| {
                let message = black_box(&messages[engine_step % 2]);
                engine_step += 1;
                engine_update(&mut engine_records, message, false)
            });
        });
        let mut patch_records = records.clone();
        let mut current: Arc<Zone> = Arc::clone(&built);
        let mut patch_step = 0usize;
        group.bench_function(BenchmarkId::new("engine+patch", count), |b| {
            b.iter_custom(|iterations| {
                let mut spent = Duration::ZERO;
                for _ in 0..iterations {
                    if patch_step.is_multiple_of(2)
                        && current.garbage_bytes() * 8 > current.table_bytes()
                    {
                        current = Arc::clone(&built);
                        patch_records = records_over(&current);
                    }
                    let started = Instant::now();
                    let difference = engine_update(
                        &mut patch_records,
                        black_box(&messages[patch_step % 2]),
                        false,
                    );
                    let next = Arc::new(next_version(&current, &patch_records, &difference));
                    patch_records = records_over(&next);
                    spent += started.elapsed();
                    current = next;
                    patch_step += 1;
                }
                spent
            });
        });
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(if count > 10_000 { 3 } else { 1 }));
        group.bench_function(BenchmarkId::new("build", count), |b| {
            b.iter_with_large_drop(|| {
                tern_zones::update::zone_of(black_box(built.origin()), &records)
                    .expect("the zone builds")
            })
        });
    }
    group.finish();
}

fn signed_update_bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("signed-update");
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_millis(500));
    for hosts in SIZES {
        for nsec3 in [false, true] {
            let zone = SignedZone::new(hosts, nsec3);
            let denial = if nsec3 { "nsec3" } else { "nsec" };
            for (label, change) in [
                ("new-name", SignedChange::NewName),
                ("delegation", SignedChange::Delegation),
            ] {
                let (unsigned, difference) = signed_update(&zone, change);
                let window = format!("window-{denial}-{label}");
                // Once, outside the timed part: the update is signed as a
                // window at this size, or the row would time a whole
                // signing under a window's name.
                let checked = bench_api::sign_update(
                    &zone.served,
                    &zone.previous,
                    &unsigned,
                    std::slice::from_ref(&difference),
                    &zone.keys,
                )
                .expect("the update signs");
                match window_check(&checked) {
                    Ok(cost) => eprintln!("signed-update/{window}/{hosts}: a window, {cost}"),
                    Err(error) => {
                        panic!("signed-update/{window} at {hosts} names is not a window: {error}")
                    }
                }
                drop(checked);
                group.sample_size(20);
                group.measurement_time(Duration::from_secs(1));
                group.bench_function(BenchmarkId::new(window, hosts), |b| {
                    b.iter_with_large_drop(|| {
                        bench_api::sign_update(
                            &zone.served,
                            &zone.previous,
                            &unsigned,
                            black_box(std::slice::from_ref(&difference)),
                            &zone.keys,
                        )
                        .expect("the update signs")
                    })
                });
                if change == SignedChange::NewName {
                    // About 0.22 s (NSEC) and 0.45 s (NSEC3) a signing
                    // at 100,000 names. criterion's flat sampling warns
                    // "Unable to complete 10 samples" whenever a sample is
                    // one iteration, as NSEC3's were at 3 s and at 5 s; at
                    // 3 s (NSEC) and 6 s (NSEC3) a sample is two (about
                    // 4.5 s and 10 s in all), without a warning.
                    let seconds = match (hosts > 10_000, nsec3) {
                        (false, _) => 1,
                        (true, false) => 3,
                        (true, true) => 6,
                    };
                    group.sample_size(10);
                    group.measurement_time(Duration::from_secs(seconds));
                    group.bench_function(
                        BenchmarkId::new(format!("whole-{denial}-{label}"), hosts),
                        |b| b.iter_with_large_drop(|| sign_whole(&zone, black_box(&unsigned))),
                    );
                }
            }
        }
    }
    group.finish();
}

fn main() {
    // What criterion_group!/criterion_main! expand to, without the
    // undocumented public function they generate.
    let mut criterion = Criterion::default().configure_from_args();
    update(&mut criterion);
    signed_update_bench(&mut criterion);
    criterion.final_summary();
}
